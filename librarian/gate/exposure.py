"""``expose`` and ``withdraw``: offering a retained recipe to the agent as a named tool.

Exposure is one commit that adds ``{recipe, digest}`` to ``tools.yaml``; nothing is copied
or linked. The receipt then says whether the tool is ``callable_now`` (resolve → validate →
persist → activate → prove): the entrypoint exists in the work tree, the work-tree content
matches the pinned digest, and the declared environment is available on this machine.
When it is not, the tool stays exposed and the receipt says why.

Reading ``tools.yaml``, whether a tool is stale and the contracts of exposed tools are
``tools.py``.
"""

from __future__ import annotations

from librarian.content.worktree import NotRegularFile, hash_work_dir
from librarian.core.events import trailers
from librarian.core.manifests import RecipeManifest
from librarian.core.names import check_name
from librarian.core.receipts import ExposureReceipt, Receipt
from librarian.errors import ConflictError, UsageError
from librarian.formats.config import TOOLS_FILE, ToolEntry, dump_tools
from librarian.gate.checks import is_approved
from librarian.gate.enforcement import unenforceable
from librarian.gate.environments import environment_availability
from librarian.git import ObjectId
from librarian.library import Item, Library, Snapshot
from librarian.txn import Transaction


def contract_problems(manifest: RecipeManifest) -> list[str]:
    """What a recipe lacks to earn a tool name: a description, typed inputs (the manifest
    parser already requires every input's type), a stated result, declared effects."""
    problems = []
    if not manifest.description.strip():
        problems.append("description: is required")
    if not manifest.result or not manifest.result.strip():
        problems.append("result: state what the tool returns (e.g. 'JSON on stdout')")
    effects = manifest.effects
    if effects is None:
        problems.append("effects: declare them, e.g. {filesystem: read, network: false}")
    else:
        if effects.filesystem is None:
            problems.append("effects.filesystem: declare none, read or write")
        if effects.network is None:
            problems.append("effects.network: declare true or false")
    return problems


def _recipe_to_expose(snapshot: Snapshot, name: str) -> tuple[Item, RecipeManifest, str]:
    item = snapshot.find(name)
    if item.kind != "recipe":
        raise UsageError(f"{item.path} is a skill; only recipes become tools")
    if item.state == "draft":
        raise ConflictError(f"{item.path} is a draft; drafts cannot be exposed",
                            hint=f"review it and `librarian promote {item.name}` first")
    content = snapshot.content(item)
    assert isinstance(content.manifest, RecipeManifest)
    problems = contract_problems(content.manifest)
    if problems:
        raise UsageError(
            f"{item.path} does not state a tool contract: " + "; ".join(problems),
            hint="a tool needs a description, typed inputs, a result and declared effects; "
            "revise the recipe",
        )
    return item, content.manifest, content.digest


def expose(library: Library, recipe: str, *, as_tool: str | None = None,
           refresh: bool = False) -> ExposureReceipt:
    with Transaction(library) as tx:
        item, manifest, digest = _recipe_to_expose(tx.base, recipe)
        tool = check_name(as_tool or item.bare_name, "tool name")
        tools = dict(tx.base.tools)
        existing = tools.get(tool)
        if refresh:
            if existing is None:
                raise UsageError(f"no tool named {tool!r} to refresh",
                                 hint=f"expose it: `librarian expose {recipe} --as {tool}`")
            if existing.recipe != item.path:
                raise ConflictError(f"tool {tool} exposes {existing.recipe}, not {item.path}",
                                    hint="withdraw it first to point the name elsewhere")
            if existing.digest == digest:
                raise UsageError(f"tool {tool} already pins the current digest of {item.path}",
                                 hint="nothing to refresh")
        elif existing is not None and existing.recipe == item.path and (
                existing.digest == digest):
            # Exposed already, as asked: nothing to change (as `hide` of a hidden skill).
            return _exposure_receipt(library, tool, item.path, item.tree, manifest, digest,
                                     None, existing.digest, refresh,
                                     best_effort=tx.base.config.best_effort, note=(
                                         f"tool {tool} already exposes {item.path} at this "
                                         "digest; nothing changed"))
        elif existing is not None:
            stale = existing.recipe == item.path and existing.digest != digest
            raise ConflictError(
                f"the tool name {tool!r} is taken (it exposes {existing.recipe})",
                hint=(f"after reviewing the change, re-pin it with `librarian expose {recipe} "
                      f"--as {tool} --refresh`") if stale else "choose another name with --as",
            )
        else:
            limit = tx.base.policy.max_exposed_tools
            if len(tools) >= limit:
                raise ConflictError(
                    f"{len(tools)} tools are exposed, the policy limit is {limit}",
                    hint="withdraw a tool, or raise policy.max_exposed_tools in library.yaml",
                )
        tools[tool] = ToolEntry(item.path, digest)
        best_effort = tx.base.config.best_effort
        verb = "refresh" if refresh else "expose"
        tx.put_file(TOOLS_FILE, dump_tools(tools))
        result = tx.commit(f"{verb} tool {tool} ({item.path})", trailers(
            "expose", tool=tool, item=item.path, digest=digest))
    return _exposure_receipt(library, tool, item.path, item.tree, manifest, digest,
                             result.commit, existing.digest if existing else None, refresh,
                             best_effort=best_effort)


def _exposure_receipt(library: Library, tool: str, path: str, tree: ObjectId,
                      manifest: RecipeManifest, digest: str, commit: str | None,
                      previous: str | None, refresh: bool, *, best_effort: bool,
                      note: str | None = None) -> ExposureReceipt:
    approved = is_approved(library, path, digest)
    callable_now, reason = prove_callable(library, path, tree, manifest,
                                          best_effort=best_effort)
    if callable_now and not approved:
        # `run` would refuse it (exit 5) until someone approves this digest.
        callable_now, reason = False, (
            f"its digest is not approved yet: review it with `librarian approve {tool}`")
    return ExposureReceipt(
        kind="exposed_tool",
        name=tool,
        path=path,
        digest=digest,
        commit=commit,
        details={
            "refreshed": refresh,
            "previous_digest": previous,
            "execution": manifest.execution,
            "environment": manifest.environment,
            "approved": approved,
        },
        callable_now=callable_now,
        reason=reason,
        note=note,
    )


def prove_callable(library: Library, path: str, tree: ObjectId, manifest: RecipeManifest,
                   *, best_effort: bool = False) -> tuple[bool, str | None]:
    """Whether the exposed tool can run here now, and if not, why."""
    directory = library.path_of(path)
    entry = directory.joinpath(*manifest.entrypoint.split("/"))
    if not entry.is_file() or entry.is_symlink():
        return False, f"the entrypoint {path}/{manifest.entrypoint} is missing"
    try:
        ids = hash_work_dir(directory)
    except NotRegularFile as exc:
        return False, f"{exc.path} is not a regular file"
    if ids is None or ids.tree_sha1 != tree:
        return False, f"{path} has local edits: the work tree does not match the pinned digest"
    availability = environment_availability(manifest.environment)
    if not availability.available:
        return False, availability.reason
    missing = unenforceable(manifest.environment, manifest.effects)
    if missing and not best_effort:
        return False, f"its declared effects cannot be enforced here: {'; '.join(missing)}"
    return True, None


def withdraw(library: Library, tool: str) -> Receipt:
    with Transaction(library) as tx:
        tools = dict(tx.base.tools)
        existing = tools.pop(tool, None)
        if existing is None:
            raise UsageError(f"no tool named {tool!r} is exposed",
                             hint="`librarian inspect tools` lists the exposed tools")
        tx.put_file(TOOLS_FILE, dump_tools(tools))
        result = tx.commit(f"withdraw tool {tool} ({existing.recipe})", trailers(
            "withdraw", tool=tool, item=existing.recipe, digest=existing.digest))
    return Receipt(
        kind="withdrawn_tool",
        name=tool,
        path=existing.recipe,
        digest=existing.digest,
        commit=result.commit,
        details={"recipe_retained": True,
                 },
        note=f"{existing.recipe} stays retained; its history and usage are kept",
    )
