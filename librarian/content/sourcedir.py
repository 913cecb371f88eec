"""Reading an item's source from disk: a directory, never following a link inside it."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from librarian.content.secretscan import secret_refusal
from librarian.core.model import ItemFile, Policy
from librarian.core.progress import advance, phase
from librarian.errors import UsageError
from librarian.formats.skillmd import validation_error

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
    st = stat_source(root)
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{root} is not a directory", path=str(root))
    problems: list[str] = []
    phase(f"read {root.name}")
    walker = _Walker(root, policy, _load_ignores(root, policy, problems), problems)
    walker.walk()
    if walker.count > policy.max_item_files:
        problems.append(f"holds {walker.count} files (the limit is {policy.max_item_files})")
    if walker.total > policy.max_item_bytes:
        problems.append(f"holds {walker.total} bytes (the limit is {policy.max_item_bytes})")
    if problems:
        raise validation_error(str(root), "refused", problems, hint=_REFUSED_HINT)
    return tuple(sorted(walker.files, key=lambda f: f.path))


def read_source_file(source: Path, st: os.stat_result, policy: Policy) -> bytes:
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


def stat_source(path: Path) -> os.stat_result:
    try:
        return path.stat()
    except FileNotFoundError:
        raise UsageError(f"{path} does not exist", hint=SOURCE_HINT, path=str(path)) from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}", path=str(path)) from None


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
    try:
        return ignore_spec(text.splitlines())
    except (ValueError, re.error) as exc:  # pathspec's pattern error, or '[z-a]' from re
        problems.append(f"{IGNORE_FILE}: holds an invalid pattern ({exc})")
        return ignore_spec()


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
            self.problems.append(f"{shown_path(rel)}: cannot be read ({exc.strerror})")
            return None
        mode = st.st_mode
        if self._ignored(rel, mode):
            return None
        if not is_utf8(entry.name):
            self.problems.append(f"{shown_path(rel)}: file name is not valid UTF-8")
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
        refusal: str | None
        if self.count > self.policy.max_item_files or self.total > self.policy.max_item_bytes:
            # Already refused for its bounds: do not load more, but names still tell.
            refusal = secret_refusal(rel, b"", self.policy.allowed_secrets)
        else:
            try:
                data = _read_file(path, st, self.policy.max_file_bytes, follow=False)
            except OSError as exc:
                self.problems.append(f"{rel}: cannot be read ({exc.strerror})")
                return
            if data is None:
                self.problems.append(f"{rel}: changed while being read")
                return
            refusal = secret_refusal(rel, data, self.policy.allowed_secrets)
            self.files.append(ItemFile(rel, bool(st.st_mode & stat.S_IXUSR), data))
            advance()
        if refusal is not None:
            self.problems.append(refusal)


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


def is_utf8(text: str) -> bool:
    # File names that are not UTF-8 arrive from os.scandir with surrogate escapes.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_path(path: str) -> str:
    return repr(path.encode("utf-8", "surrogateescape"))[2:-1] if not is_utf8(path) else path
