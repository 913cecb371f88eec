"""Validating an item's files by the same rules wherever they come from (disk or a git tree)."""

from __future__ import annotations

import stat
from collections.abc import Sequence
from pathlib import Path

from librarian.content.secretscan import secret_problem
from librarian.content.sourcedir import (
    SOURCE_HINT,
    is_utf8,
    read_source_dir,
    read_source_file,
    shown_path,
    stat_source,
)
from librarian.core.model import (
    MANIFEST_FILES,
    ItemContent,
    ItemFile,
    ItemKind,
    Manifest,
    Policy,
    SkillManifest,
)
from librarian.core.names import check_name
from librarian.errors import UsageError, ValidationError
from librarian.formats.recipe import RECIPE_FILE, parse_recipe
from librarian.formats.skillmd import SKILL_FILE, parse_skill_md, validation_error


def validate_item(
    files: Sequence[ItemFile],
    policy: Policy,
    *,
    expected_name: str | None = None,
    where: str = "",
) -> ItemContent:
    """Judge an item's files: kind, manifest, name, paths, bounds and secrets."""
    problems: list[str] = []
    warnings: list[str] = []
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

    manifest = _manifest(kind, by_path, problems, warnings)
    if manifest is not None and kind is not None and expected_name is not None:
        if manifest.name != expected_name:
            problems.append(
                f"name: {manifest.name!r} in {MANIFEST_FILES[kind]} does not match "
                f"the directory name {expected_name!r}"
            )
    problems.extend(_path_problems([f.path for f in files]))
    problems.extend(_bound_problems(files, policy))
    for item_file in files:
        reason = secret_problem(item_file.path, item_file.data)
        if reason is not None:
            problems.append(f"{item_file.path}: looks like a secret ({reason})")

    if problems or manifest is None or kind is None:
        raise validation_error(where, f"invalid {kind or 'item'}", problems)
    return ItemContent(
        kind=kind,
        name=manifest.name,
        files=tuple(sorted(files, key=lambda f: f.path)),
        manifest=manifest,
        warnings=tuple(warnings),
    )


def load_source(source: Path, policy: Policy, *, name: str | None = None) -> ItemContent:
    """An item from a directory, or from one .md file that becomes the item's SKILL.md."""
    if name is not None:
        check_name(name)
    st = stat_source(source)
    if stat.S_ISDIR(st.st_mode):
        content = validate_item(read_source_dir(source, policy), policy, where=str(source))
    elif stat.S_ISREG(st.st_mode):
        if source.suffix.lower() != ".md":
            raise UsageError(
                f"{source} is neither a directory nor a .md file",
                hint=SOURCE_HINT,
                path=str(source),
            )
        data = read_source_file(source, st, policy)
        # The file's bytes become SKILL.md exactly; its executable bit is not content here.
        content = validate_item([ItemFile(SKILL_FILE, False, data)], policy, where=str(source))
    else:
        raise UsageError(f"{source} is a special file", hint=SOURCE_HINT, path=str(source))
    if name is not None and name != content.name:
        manifest_file = MANIFEST_FILES[content.kind]
        message = f"the name {name!r} differs from {content.name!r} in {manifest_file}"
        raise ValidationError(
            f"{source}: {message}",
            problems=(message,),
            hint=f"change 'name:' in {manifest_file} to {name!r} (librarian never rewrites "
            "content: the digest covers its bytes), or leave out --name",
            path=str(source),
        )
    return content


def _manifest(
    kind: ItemKind | None,
    by_path: dict[str, ItemFile],
    problems: list[str],
    warnings: list[str],
) -> Manifest | None:
    if kind is None:
        return None
    manifest_file = MANIFEST_FILES[kind]
    data = by_path[manifest_file].data
    manifest: Manifest
    try:
        if kind == "skill":
            manifest = parse_skill_md(data, manifest_file)
        else:
            manifest = parse_recipe(data, manifest_file, frozenset(by_path))
    except ValidationError as exc:
        problems.extend(f"{manifest_file}: {problem}" for problem in exc.problems)
        return None
    if isinstance(manifest, SkillManifest) and manifest.unknown_keys:
        keys = ", ".join(manifest.unknown_keys)
        warnings.append(
            f"{SKILL_FILE}: frontmatter keys not in the Agent Skills spec, kept as they are: {keys}"
        )
    return manifest


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
        if any(part.lower() == ".git" for part in parts):
            problems.append(f"{path}: a .git entry cannot be stored")
        if path in seen:
            problems.append(f"{path}: appears twice")
        seen.add(path)
        directories.update("/".join(parts[:i]) for i in range(1, len(parts)))
    for path in sorted(seen & directories):
        problems.append(f"{path}: is both a file and a directory")
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
