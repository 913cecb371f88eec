"""The execution gate: resolve a tool or recipe, refuse what must not run, record approvals.

``run`` refuses (exit 5, nothing executed, the refusal appended to the usage ledger) when

1. a tool is stale (its recipe changed since it was exposed, or is gone), or NAME is a
   draft;
2. the recipe's work-tree content differs from its committed content (drift);
3. an input is missing, unknown or of the wrong type;
4. the declared environment is not available on this machine; the declared effects cannot
   be enforced here (unless the committed policy says ``run: {enforcement: best-effort}``);
   or it is docker and the recipe declares ``path`` inputs (the container cannot see host
   paths);
5. the recipe's committed digest has not been approved.

Approvals live in ``.git/librarian/approvals.json`` (local state, not history), keyed by the
recipe's library path and bound to its digest: a revised recipe needs a new approval.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NoReturn

from librarian.cache import DigestCache
from librarian.content.patch import tree_diff
from librarian.content.worktree import NotRegularFile, hash_work_dir
from librarian.core.fsutil import atomic_write
from librarian.core.manifests import RecipeManifest
from librarian.core.model import ItemFile, Policy
from librarian.core.receipts import Receipt
from librarian.errors import ConflictError, GateRefusal, LibrarianError, UsageError
from librarian.formats.config import ToolEntry
from librarian.formats.recipe import coerce_input, input_env_name
from librarian.gate.enforcement import unenforceable
from librarian.gate.environments import environment_availability, path_input_problem
from librarian.gate.ledger import REFUSED, LedgerEntry, append, now
from librarian.gate.tools import tool_state
from librarian.git import GitStore
from librarian.library import Item, Library, Snapshot
from librarian.txn import library_lock

APPROVALS_FILE = "approvals.json"
Entry = Literal["tool", "recipe"]


@dataclass(frozen=True, slots=True)
class Target:
    """What ``run NAME`` resolved to, read from one commit."""

    entry: Entry  # how it was asked for
    name: str  # the tool or recipe name as given
    tool: ToolEntry | None  # the tools.yaml entry when ``entry`` is "tool"
    item: Item
    digest: str  # the recipe's committed digest
    manifest: RecipeManifest
    files: tuple[ItemFile, ...]
    commit: str  # the commit everything was read from
    policy: Policy = field(default_factory=Policy)  # the committed policy (run limits)
    best_effort: bool = False  # ``run: {enforcement: best-effort}`` is committed


def load_recipe(snapshot: Snapshot, item: Item) -> tuple[
        RecipeManifest, tuple[ItemFile, ...], str]:
    """The committed recipe's manifest, files and digest; UsageError when it is invalid."""
    content = snapshot.content(item)
    if not isinstance(content.manifest, RecipeManifest):
        raise UsageError(f"{item.path} is a skill; only recipes run or become tools")
    return content.manifest, content.files, content.digest


def _head(library: Library, store: GitStore) -> Snapshot:
    snapshot = Snapshot.head(library, store)
    if snapshot.commit is None:
        raise UsageError("the library has no commits yet")
    return snapshot


def resolve_target(library: Library, name: str) -> Target:
    """A tool (by tools.yaml) or a retained or managed recipe, as committed at HEAD.

    Unknown names are usage errors (exit 2); a stale tool or a draft is a refusal."""
    with library.store() as store:
        snapshot = _head(library, store)
        head = snapshot.commit
        assert head is not None
        tool = snapshot.tools.get(name)
        if tool is not None:
            _refuse_stale(snapshot, name, tool)
            item = snapshot.find(tool.recipe)
            entry: Entry = "tool"
        else:
            item = snapshot.find(name)
            entry = "recipe"
        if item.kind != "recipe":
            raise UsageError(f"{item.path} is a skill; only recipes run",
                             hint="skills are read, not run: `librarian cat " + name + "`")
        if item.state == "draft":
            refuse(library, entry, name, item.path, None,
                   f"{item.path} is a draft; drafts do not run",
                   hint=f"review it and `librarian promote {item.name}` first")
        try:
            manifest, files, digest = load_recipe(snapshot, item)
        except UsageError as exc:
            refuse(library, entry, name, item.path, None,
                   f"{item.path} is not a valid recipe as committed: {exc.message}",
                   hint="`librarian check` lists the problems")
        config = snapshot.config
        return Target(entry, name, tool, item, digest, manifest, files, head.decode(),
                      config.policy, config.best_effort)


def _refuse_stale(snapshot: Snapshot, name: str, tool: ToolEntry) -> None:
    """Refuse (exit 5) a tool that is not current: its recipe is gone, invalid, or
    changed since it was exposed."""
    library = snapshot.library
    digests = DigestCache(library.cache_dir)
    state = tool_state(snapshot, tool, digests)
    digests.save()
    if state.stale is None:
        return
    recipe = tool.recipe.rsplit("/", 1)[-1]
    hints = {
        "gone": "withdraw the tool, or restore the recipe and re-expose it",
        "invalid": "`librarian check` lists the problems",
        "changed": f"review it, then `librarian expose {recipe} --as {name} --refresh`",
    }
    refuse(library, "tool", name, tool.recipe, tool.digest,
           f"tool {name} is stale: {state.reason} ({tool.recipe})", hint=hints[state.stale])


def refuse(library: Library, entry: str, name: str, recipe: str, digest: str | None,
           reason: str, *, hint: str | None = None) -> NoReturn:
    """Record a refusal in the usage ledger, then raise it (exit 5)."""
    append(library, LedgerEntry(time=now(), entry=entry, name=name, recipe=recipe,
                                digest=digest, status=REFUSED, reason=reason))
    raise GateRefusal(reason, hint=hint)


def check_gate(library: Library, target: Target, raw_args: Mapping[str, str], *,
               cwd: Path, approve_now: bool = False) -> dict[str, object]:
    """Run every check in order; return the typed inputs or refuse (exit 5)."""
    item = target.item

    def deny(reason: str, hint: str | None = None) -> NoReturn:
        refuse(library, target.entry, target.name, item.path, target.digest, reason, hint=hint)

    # 1. a stale tool or a draft was refused when the target was resolved
    work = library.path_of(item.path)
    try:
        ids = hash_work_dir(work) if work.is_dir() else None
    except NotRegularFile:
        ids = None
    if ids is None or ids.tree_sha1 != item.tree:
        what = "is missing from the work tree" if not work.is_dir() else "has local edits"
        deny(f"{item.path} {what}: its content differs from the committed digest",
             hint=f"review with `librarian diff {item.name}`; commit a revision or revert it")
    try:
        inputs = typed_inputs(target.manifest, raw_args, cwd)
    except UsageError as exc:
        deny(exc.message, exc.hint)
    availability = environment_availability(target.manifest.environment)
    if not availability.available:
        deny(f"the {target.manifest.environment} environment is missing: {availability.reason}")
    missing = unenforceable(target.manifest.environment, target.manifest.effects)
    if missing and not target.best_effort:
        deny(f"the declared effects cannot be enforced here: {'; '.join(missing)}",
             hint="run it on a machine that enforces them, or commit `run: {enforcement: "
             "best-effort}` in library.yaml to run it with what can be enforced")
    problem = path_input_problem(target.manifest)
    if problem is not None:
        deny(problem, hint="pass the content another way (a string input, or stdin), or use "
             "a shell or python recipe")
    if not approve_now and not is_approved(library, item.path, target.digest):
        deny(f"{item.path} at {target.digest[:19]}… is not approved to run",
             hint=f"review it with `librarian approve {target.name}` (or run with --yes)")
    return inputs


def typed_inputs(manifest: RecipeManifest, raw_args: Mapping[str, str],
                 cwd: Path) -> dict[str, object]:
    """Caller arguments converted to their declared types, defaults filled in; path inputs
    made absolute against the caller's directory (the recipe runs elsewhere)."""
    declared = {spec.name: spec for spec in manifest.inputs}
    unknown = sorted(set(raw_args) - set(declared))
    if unknown:
        allowed = ", ".join(declared) or "none"
        raise UsageError(f"unknown input {unknown[0]!r} (declared inputs: {allowed})")
    values: dict[str, object] = {}
    for name, spec in declared.items():
        if name in raw_args:
            value = coerce_input(spec, raw_args[name])
        elif spec.required:
            raise UsageError(f"input {name} is required ({spec.type})",
                             hint=f"pass --arg {name}=VALUE")
        elif spec.default is not None:
            value = spec.default
        else:
            continue
        if spec.type == "path" and isinstance(value, str):
            value = str(cwd / value) if not Path(value).is_absolute() else value
        values[name] = value
    return values


def input_environment(inputs: Mapping[str, object]) -> dict[str, str]:
    out = {}
    for name, value in inputs.items():
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        out[input_env_name(name)] = text
    return out


# -- approvals ------------------------------------------------------------------------


def _approvals_path(library: Library) -> Path:
    return library.state_dir / APPROVALS_FILE


def _load_approvals(library: Library) -> dict[str, list[dict[str, Any]]]:
    try:
        doc = json.loads(_approvals_path(library).read_bytes())
    except FileNotFoundError:
        return {}
    except ValueError:
        return {}  # written atomically; garbage means someone else wrote it: start over
    approvals = doc.get("approvals") if isinstance(doc, dict) else None
    if not isinstance(approvals, dict):
        return {}
    return {str(k): [e for e in v if isinstance(e, dict)] for k, v in approvals.items()
            if isinstance(v, list)}


def is_approved(library: Library, recipe_path: str, digest: str) -> bool:
    return any(e.get("digest") == digest for e in _load_approvals(library).get(recipe_path, []))


def approvals_of(library: Library, recipe_path: str) -> list[dict[str, Any]]:
    """Every approval recorded for the recipe at ``recipe_path``, oldest first."""
    return list(_load_approvals(library).get(recipe_path, []))


def last_approval(library: Library, recipe_path: str) -> dict[str, Any] | None:
    entries = _load_approvals(library).get(recipe_path, [])
    return entries[-1] if entries else None


@dataclass(frozen=True, slots=True)
class ReviewFile:
    path: str
    bytes: int
    executable: bool
    text: str | None  # None for binary content


@dataclass(frozen=True, slots=True)
class ApprovalReview:
    """What ``approve`` shows before it records anything."""

    name: str
    path: str
    digest: str
    tree: str
    commit: str
    already_approved: bool
    previous: str | None  # the digest approved before, if any
    files: tuple[ReviewFile, ...]
    diff: str | None  # since ``previous``, when its content is still in the object store


def review_approval(library: Library, name: str) -> ApprovalReview:
    with library.store() as store:
        snapshot = _head(library, store)
        tool = snapshot.tools.get(name)
        item = snapshot.find(tool.recipe if tool is not None else name)
        if item.kind != "recipe":
            raise UsageError(f"{item.path} is a skill; only recipes are approved to run")
        if item.state == "draft":
            raise ConflictError(f"{item.path} is a draft; drafts do not run",
                                hint=f"`librarian promote {item.name}` first")
        _, files, digest = load_recipe(snapshot, item)
        previous = last_approval(library, item.path)
        already = is_approved(library, item.path, digest)
        diff = None
        previous_digest = previous.get("digest") if previous else None
        if previous and previous_digest != digest and isinstance(previous.get("tree"), str):
            try:
                old = store.read_files(str(previous["tree"]).encode())
            except (LibrarianError, KeyError):
                old = None
            if old is not None:
                diff = "\n".join(tree_diff(item.path, old, files)) + "\n"
    shown = tuple(ReviewFile(f.path, len(f.data), f.executable, _text(f.data)) for f in files)
    assert snapshot.commit is not None
    return ApprovalReview(name, item.path, digest, item.tree.decode(), snapshot.commit.decode(),
                          already,
                          previous_digest if previous_digest != digest else None, shown, diff)


def _text(data: bytes) -> str | None:
    if b"\x00" in data[:8000]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def record_approval(library: Library, review: ApprovalReview) -> Receipt:
    """Approve exactly the digest that was reviewed (exit 3 if the recipe moved since)."""
    with library.store() as store:
        entry = Snapshot.head(library, store).lookup(review.path)
    if entry is None or entry.sha.decode() != review.tree:
        raise ConflictError(f"{review.path} changed while it was being reviewed",
                            hint="run `librarian approve` again")
    _store_approval(library, review.path, review.digest, review.tree, review.commit)
    return Receipt(
        kind="approval",
        name=review.name,
        path=review.path,
        digest=review.digest,
        commit=None,
        details={"already_approved": review.already_approved, "previous": review.previous},
    )


def _store_approval(library: Library, path: str, digest: str, tree: str, commit: str) -> None:
    with library_lock(library.lock_path):
        approvals = _load_approvals(library)
        entries = approvals.setdefault(path, [])
        if any(e.get("digest") == digest for e in entries):
            return
        entries.append({"digest": digest, "tree": tree, "commit": commit,
                        "time": round(time.time(), 3)})
        doc = {"version": 1, "approvals": approvals}
        atomic_write(_approvals_path(library), json.dumps(doc, indent=1).encode())


def approve_target(library: Library, target: Target) -> None:
    """``run --yes``: approve the digest that just passed every other check."""
    _store_approval(library, target.item.path, target.digest, target.item.tree.decode(),
                    target.commit)


@dataclass(frozen=True, slots=True)
class Approval:
    """What ``approve`` reviewed and what it recorded."""

    review: ApprovalReview
    receipt: Receipt


def approve(library: Library, name: str,
            confirm: Callable[[ApprovalReview], bool] | None = None) -> Approval:
    """Review NAME's committed recipe and approve exactly the reviewed digest.

    ``confirm`` is shown the review and decides (declining is a usage error, exit 2, and
    records nothing); without it the review is approved as it stands: a non-interactive
    caller approves what the returned review shows."""
    review = review_approval(library, name)
    if confirm is not None and not confirm(review):
        raise UsageError(f"{review.path} was not approved",
                         hint=f"nothing was recorded; `librarian approve {name}` again")
    return Approval(review, record_approval(library, review))
