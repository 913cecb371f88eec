"""Validating an item's files by the same rules wherever they come from (disk or a git tree)."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from librarian.content.secretscan import secret_refusal
from librarian.content.sourcedir import (
    SOURCE_HINT,
    is_utf8,
    read_source_dir,
    read_source_file,
    shown_path,
    stat_source,
)
from librarian.core.gitpaths import collisions, path_problem, visible
from librarian.core.manifests import ItemContent, Manifest, Nonconformity, SkillManifest
from librarian.core.markers import MARKER_OURS, MARKERS_PROBLEM, has_markers
from librarian.core.model import MANIFEST_FILES, ItemFile, ItemKind, Policy
from librarian.core.names import check_name, name_problem
from librarian.errors import UsageError, ValidationError
from librarian.formats.capture import captured_skill_md, needs_frontmatter, slug
from librarian.formats.recipe import RECIPE_FILE, parse_recipe
from librarian.formats.skillmd import (
    SKILL_FILE,
    directory_findings,
    parse_skill_md,
    validation_error,
)


def validate_item(
    files: Sequence[ItemFile],
    policy: Policy,
    *,
    expected_name: str | None = None,
    where: str = "",
) -> ItemContent:
    """Judge an item's files: kind, manifest, name, paths, bounds and secrets.

    ``expected_name`` is the item's identity, its directory's name (without it, the
    manifest's name). Unsafe or unusable content is refused; a skill breaking a rule of the
    Agent Skills format that clients tolerate is admitted with a warning naming the rule,
    or refused under ``policy: {conformance: strict}`` (spec §2)."""
    problems: list[str] = []
    by_path = {f.path: f for f in files}
    has_skill, has_recipe = SKILL_FILE in by_path, RECIPE_FILE in by_path
    kind: ItemKind | None = None
    if has_skill and has_recipe:
        problems.append(f"holds both {SKILL_FILE} and {RECIPE_FILE} (an item is one or the other)")
    elif has_skill:
        kind = "skill"
    elif has_recipe:
        kind = "recipe"
    else:
        problems.append(f"holds neither {SKILL_FILE} nor {RECIPE_FILE}")

    manifest = _manifest(kind, by_path, problems)
    identity = expected_name if expected_name is not None else (
        manifest.name if manifest is not None else None)
    findings: tuple[Nonconformity, ...] = ()
    if isinstance(manifest, SkillManifest) and identity is not None:
        findings = manifest.nonconforming + directory_findings(manifest, identity)
    elif manifest is not None and kind is not None and manifest.name != identity:
        problems.append(
            f"name: {manifest.name!r} in {MANIFEST_FILES[kind]} does not match "
            f"the directory name {identity!r}"
        )
    if identity is not None and name_problem(identity) is not None:
        problems.append(f"the item name {identity!r} {name_problem(identity)} (an item is "
                        "named by its directory: a-z, 0-9 and '-', at most 64)")
    problems.extend(_path_problems([f.path for f in files]))
    problems.extend(_bound_problems(files, policy))
    for item_file in files:
        refusal = secret_refusal(item_file.path, item_file.data, policy.allowed_secrets)
        if refusal is not None:
            problems.append(refusal)
        if MARKER_OURS in item_file.data and has_markers(item_file.data):  # C search first
            problems.append(f"{item_file.path}: {MARKERS_PROBLEM}")
    warnings = [f.warning(SKILL_FILE) for f in findings]
    hint = None
    if policy.conformance == "strict" and warnings:
        problems.extend(warnings)
        hint = ("library.yaml's policy: {conformance: strict} refuses content that breaks a "
                "rule of the Agent Skills format")

    if problems or manifest is None or kind is None or identity is None:
        raise validation_error(where, f"invalid {kind or 'item'}", problems, hint=hint)
    return ItemContent(
        kind=kind,
        name=identity,
        files=tuple(sorted(files, key=lambda f: f.path)),
        manifest=manifest,
        warnings=tuple(warnings),
    )


def load_source(source: Path, policy: Policy, *, name: str | None = None,
                capture: bool = False) -> ItemContent:
    """An item from a directory, or from one .md file that becomes the item's SKILL.md.
    It is named ``name``, else by its manifest's name when that is a valid name, else by
    the source directory's name; then judged as ``check`` judges the item in its library
    directory of that name (spec §2: the item's identity is its directory). With
    ``capture`` (a draft), a .md file without frontmatter gets one built from its file
    name and first heading (``formats/capture.py``)."""
    if name is not None:
        check_name(name)
    st = stat_source(source)
    if stat.S_ISDIR(st.st_mode):
        _refuse_not_an_item(source)
        files = read_source_dir(source, policy)
        identity = name or default_identity(files, source.name)
        return validate_item(files, policy, expected_name=identity, where=str(source))
    if stat.S_ISREG(st.st_mode):
        if source.suffix.lower() != ".md":
            raise UsageError(
                f"{source} is neither a directory nor a .md file",
                hint=SOURCE_HINT,
                path=str(source),
            )
        data = read_source_file(source, st, policy)
        if capture and needs_frontmatter(data):
            name = name or slug(source.stem)
            if not name:
                raise UsageError(f"{source}: no item name can be made from the file name",
                                 hint="give one with --name", path=str(source))
            data = captured_skill_md(data, name)
        # The file's bytes become SKILL.md exactly; its executable bit is not content here.
        files = (ItemFile(SKILL_FILE, False, data),)
        try:
            return validate_item(files, policy,
                                 expected_name=name or default_identity(files, None),
                                 where=str(source))
        except ValidationError as exc:
            if exc.hint is None and needs_frontmatter(data):
                exc.hint = (f"`librarian retain {source} --draft` captures a note without "
                            "frontmatter, building it from the file name and first heading")
            raise
    raise UsageError(f"{source} is a special file", hint=SOURCE_HINT, path=str(source))


def _refuse_not_an_item(source: Path) -> None:
    """A directory with neither manifest is said to be no item first, before its files
    are read and scanned (a plugin folder's .env is not what is wrong with it)."""
    if any(os.path.lexists(source / manifest) for manifest in (SKILL_FILE, RECIPE_FILE)):
        return
    skills = source / "skills"
    held = sorted(child.name for child in skills.iterdir()
                  if (child / SKILL_FILE).is_file()) if skills.is_dir() else []
    hint = (f"it holds skills/ ({', '.join(held[:3])}{', …' if len(held) > 3 else ''}): "
            f"retain each, e.g. `librarian retain {skills}/*`" if held else SOURCE_HINT)
    raise UsageError(f"{source} is neither a skill nor a recipe: it holds no {SKILL_FILE} "
                     f"and no {RECIPE_FILE}", hint=hint, path=str(source))


def default_identity(files: Sequence[ItemFile], directory: str | None) -> str | None:
    """The manifest's name when it is a valid item name, else ``directory``."""
    by_path = {f.path: f for f in files}
    declared: str | None = None
    try:
        if SKILL_FILE in by_path:
            declared = parse_skill_md(by_path[SKILL_FILE].data, SKILL_FILE).name
        elif RECIPE_FILE in by_path:
            declared = parse_recipe(by_path[RECIPE_FILE].data, RECIPE_FILE,
                                    frozenset(by_path)).name
    except ValidationError:
        pass  # validate_item says why
    for candidate in (declared, directory):
        if candidate and name_problem(candidate) is None:
            return candidate
    return declared or directory


def _manifest(
    kind: ItemKind | None,
    by_path: dict[str, ItemFile],
    problems: list[str],
) -> Manifest | None:
    if kind is None:
        return None
    manifest_file = MANIFEST_FILES[kind]
    data = by_path[manifest_file].data
    try:
        if kind == "skill":
            return parse_skill_md(data, manifest_file)
        return parse_recipe(data, manifest_file, frozenset(by_path))
    except ValidationError as exc:
        problems.extend(f"{manifest_file}: {problem}" for problem in exc.problems)
        return None


def _path_problems(paths: Sequence[str]) -> list[str]:
    problems: list[str] = []
    seen: set[str] = set()
    directories: set[str] = set()
    for path in paths:
        parts = path.split("/")
        if (
            not path
            or "\x00" in path
            or not is_utf8(path)
            or any(part in ("", ".", "..") for part in parts)
        ):
            problems.append(f"{shown_path(path)}: is not a relative path inside the item")
            continue
        reason = path_problem(path)
        if reason is not None:
            problems.append(f"{visible(shown_path(path))}: {reason}")
            continue
        if path in seen:
            problems.append(f"{path}: appears twice")
        seen.add(path)
        directories.update("/".join(parts[:i]) for i in range(1, len(parts)))
    for path in sorted(seen & directories):
        problems.append(f"{path}: is both a file and a directory")
    for first, other in collisions(seen):
        problems.append(f"{visible(other)}: one name with {visible(first)} on macOS and Windows "
                        "(case or Unicode normalisation)")
    return problems


def _bound_problems(files: Sequence[ItemFile], policy: Policy) -> list[str]:
    problems = [
        f"{f.path}: is {len(f.data)} bytes (the limit per file is {policy.max_file_bytes})"
        for f in files
        if len(f.data) > policy.max_file_bytes
    ]
    if len(files) > policy.max_item_files:
        problems.append(f"holds {len(files)} files (the limit is {policy.max_item_files})")
    total = sum(len(f.data) for f in files)
    if total > policy.max_item_bytes:
        problems.append(f"holds {total} bytes (the limit is {policy.max_item_bytes})")
    return problems
