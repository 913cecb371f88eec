"""Loading an item from disk and validating item content wherever it comes from.

``read_source_dir`` reads a directory without ever following a link inside it;
``validate_item`` judges a set of files (from disk or from a git tree) by the same rules,
so content entering through any door is held to the bounds, name and secret checks.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from .errors import UsageError, ValidationError
from .model import (
    MANIFEST_FILES,
    ItemContent,
    ItemFile,
    ItemKind,
    Manifest,
    Policy,
    SkillManifest,
)
from .names import check_name
from .recipe import RECIPE_FILE, parse_recipe
from .secretscan import secret_problem
from .skillmd import SKILL_FILE, parse_skill_md, validation_error

DEFAULT_IGNORES = (".git/", "__pycache__/", "*.pyc", ".DS_Store")
IGNORE_FILE = ".librarianignore"
SOURCE_HINT = (
    "SOURCE is a directory holding SKILL.md or recipe.yaml, or one .md file with skill frontmatter"
)
_REFUSED_HINT = f"files that should stay out can be listed in {IGNORE_FILE} (gitignore syntax)"
# O_NONBLOCK: should a file be swapped for a fifo after lstat, open must not hang on it.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


class IgnoreMatcher(Protocol):
    def match_file(self, file: str) -> bool: ...


class DefaultIgnores:
    """``DEFAULT_IGNORES`` matched by name, as gitignore matches them, without importing
    pathspec (~30 ms) when a source has no ``.librarianignore``. A property test holds it
    equal to pathspec's reading of the same patterns."""

    _DIRECTORIES = frozenset({".git", "__pycache__"})

    def match_file(self, file: str) -> bool:
        parts = file.split("/")
        is_dir = parts[-1] == ""
        if is_dir:
            parts.pop()
        # Anything below an ignored directory is ignored; "*.pyc" and ".DS_Store" name
        # directories too (no trailing slash), ".git/" and "__pycache__/" only directories.
        if any(self._names(part) or part in self._DIRECTORIES for part in parts[:-1]):
            return True
        return self._names(parts[-1]) or (is_dir and parts[-1] in self._DIRECTORIES)

    @staticmethod
    def _names(name: str) -> bool:
        return name.endswith(".pyc") or name == ".DS_Store"


def ignore_spec(lines: Iterable[str] = ()) -> IgnoreMatcher:
    """The default ignores followed by ``lines`` (gitignore syntax, later lines win)."""
    extra = list(lines)
    if not extra:
        return DefaultIgnores()
    import pathspec

    spec: IgnoreMatcher = pathspec.GitIgnoreSpec.from_lines([*DEFAULT_IGNORES, *extra])
    return spec


def read_source_dir(root: Path, policy: Policy) -> tuple[ItemFile, ...]:
    """Every admissible file under ``root``, sorted by path; ValidationError lists refusals."""
    # ``root`` itself may be reached through a link (it is not content); nothing inside is.
    st = _stat_source(root)
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{root} is not a directory", path=str(root))
    problems: list[str] = []
    walker = _Walker(root, policy, _load_ignores(root, policy, problems), problems)
    walker.walk()
    if walker.count > policy.max_item_files:
        problems.append(f"holds {walker.count} files (the limit is {policy.max_item_files})")
    if walker.total > policy.max_item_bytes:
        problems.append(f"holds {walker.total} bytes (the limit is {policy.max_item_bytes})")
    if problems:
        raise validation_error(str(root), "refused", problems, hint=_REFUSED_HINT)
    return tuple(sorted(walker.files, key=lambda f: f.path))


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
    st = _stat_source(source)
    if stat.S_ISDIR(st.st_mode):
        content = validate_item(read_source_dir(source, policy), policy, where=str(source))
    elif stat.S_ISREG(st.st_mode):
        if source.suffix.lower() != ".md":
            raise UsageError(
                f"{source} is neither a directory nor a .md file",
                hint=SOURCE_HINT,
                path=str(source),
            )
        data = _read_single_file(source, st, policy)
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


def _stat_source(path: Path) -> os.stat_result:
    try:
        return path.stat()
    except FileNotFoundError:
        raise UsageError(f"{path} does not exist", hint=SOURCE_HINT, path=str(path)) from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}", path=str(path)) from None


def _read_single_file(source: Path, st: os.stat_result, policy: Policy) -> bytes:
    where = str(source)
    if st.st_nlink > 1:
        raise validation_error(where, "refused", [_hard_link_problem(source.name, st)])
    if st.st_size > policy.max_file_bytes:
        raise validation_error(where, "refused", [_size_problem(source.name, st.st_size, policy)])
    try:
        data = _read_file(str(source), st, policy.max_file_bytes, follow=True)
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror}", path=where) from None
    if data is None:
        raise validation_error(where, "refused", [f"{source.name}: changed while being read"])
    return data


def _read_file(path: str, st: os.stat_result, limit: int, *, follow: bool) -> bytes | None:
    """The bytes of the regular file ``st`` describes, or None if it changed under us."""
    flags = _OPEN_FLAGS if follow else _OPEN_FLAGS | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as handle:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return None
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None


def _load_ignores(root: Path, policy: Policy, problems: list[str]) -> IgnoreMatcher:
    """Defaults plus ``.librarianignore``; the walk refuses it if it is a link or too big."""
    path = root / IGNORE_FILE
    try:
        st = path.lstat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > policy.max_file_bytes:
            return ignore_spec()
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return ignore_spec()
    except OSError as exc:
        problems.append(f"{IGNORE_FILE}: cannot be read ({exc.strerror})")
        return ignore_spec()
    except UnicodeDecodeError as exc:
        problems.append(f"{IGNORE_FILE}: is not valid UTF-8 (byte {exc.start})")
        return ignore_spec()
    return ignore_spec(text.splitlines())


class _Walker:
    """Depth-first walk that reads files only while the item is within its bounds."""

    def __init__(
        self, root: Path, policy: Policy, spec: IgnoreMatcher, problems: list[str]
    ) -> None:
        self.root = root
        self.policy = policy
        self.spec = spec
        self.problems = problems
        self.files: list[ItemFile] = []
        self.count = 0
        self.total = 0

    def walk(self) -> None:
        # A stack of sorted listings: problems come out in path order, without recursion.
        stack = [(iter(self._listing(str(self.root), "")), "")]
        while stack:
            entries, prefix = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                continue
            subdir = self._entry(entry, prefix)
            if subdir is not None:
                stack.append((iter(self._listing(entry.path, subdir)), subdir))

    def _listing(self, directory: str, prefix: str) -> list[os.DirEntry[str]]:
        try:
            with os.scandir(directory) as scan:
                return sorted(scan, key=lambda e: e.name)
        except OSError as exc:
            self.problems.append(f"{prefix or '.'}: cannot be listed ({exc.strerror})")
            return []

    def _entry(self, entry: os.DirEntry[str], prefix: str) -> str | None:
        """Handle one entry; return its relative prefix when it is a directory to enter."""
        rel = prefix + entry.name
        if entry.name == ".git":  # git can never store it, whatever the ignore file says
            return None
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError as exc:
            self.problems.append(f"{_shown(rel)}: cannot be read ({exc.strerror})")
            return None
        mode = st.st_mode
        if self._ignored(rel, mode):
            return None
        if not _is_utf8(entry.name):
            self.problems.append(f"{_shown(rel)}: file name is not valid UTF-8")
            return None
        if stat.S_ISLNK(mode):
            self.problems.append(f"{rel}: is a symbolic link (links are never admitted)")
        elif stat.S_ISDIR(mode):
            return rel + "/"
        elif stat.S_ISREG(mode):
            self._file(entry.path, rel, st)
        else:
            self.problems.append(f"{rel}: is a special file ({_special_kind(mode)})")
        return None

    def _ignored(self, rel: str, mode: int) -> bool:
        if stat.S_ISDIR(mode):
            return bool(self.spec.match_file(rel + "/"))
        if stat.S_ISLNK(mode):  # a link named like an ignored directory is ignored too
            return bool(self.spec.match_file(rel) or self.spec.match_file(rel + "/"))
        return bool(self.spec.match_file(rel))

    def _file(self, path: str, rel: str, st: os.stat_result) -> None:
        self.count += 1
        self.total += st.st_size
        if st.st_nlink > 1:
            self.problems.append(_hard_link_problem(rel, st))
            return
        if st.st_size > self.policy.max_file_bytes:
            self.problems.append(_size_problem(rel, st.st_size, self.policy))
            return
        reason: str | None
        if self.count > self.policy.max_item_files or self.total > self.policy.max_item_bytes:
            # Already refused for its bounds: do not load more, but names still tell.
            reason = secret_problem(rel, b"")
        else:
            try:
                data = _read_file(path, st, self.policy.max_file_bytes, follow=False)
            except OSError as exc:
                self.problems.append(f"{rel}: cannot be read ({exc.strerror})")
                return
            if data is None:
                self.problems.append(f"{rel}: changed while being read")
                return
            reason = secret_problem(rel, data)
            self.files.append(ItemFile(rel, bool(st.st_mode & stat.S_IXUSR), data))
        if reason is not None:
            self.problems.append(f"{rel}: looks like a secret ({reason})")


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
            or not _is_utf8(path)
            or any(part in ("", ".", "..") for part in parts)
        ):
            problems.append(f"{_shown(path)}: is not a relative path inside the item")
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


def _hard_link_problem(rel: str, st: os.stat_result) -> str:
    return f"{rel}: is hard-linked ({st.st_nlink} links; copy it instead)"


def _size_problem(rel: str, size: int, policy: Policy) -> str:
    return f"{rel}: is {size} bytes (the limit per file is {policy.max_file_bytes})"


def _special_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "unknown type"


def _is_utf8(text: str) -> bool:
    # File names that are not UTF-8 arrive from os.scandir with surrogate escapes.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(path: str) -> str:
    return repr(path.encode("utf-8", "surrogateescape"))[2:-1] if not _is_utf8(path) else path
