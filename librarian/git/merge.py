"""Three-way merge of one item's files, file by file, with git's semantics (pure: no I/O).

Owns ``merge_files(base, ours, theirs)``: three maps of item-relative path ->
``FileVersion(mode, data)`` in, one frozen ``ItemMerge`` out, either the merged files or
every conflict with its overlapping hunks. It imports only ``dulwich.merge`` (whose
``make_merge3`` builds the line merge over the ``merge3`` package) and the standard library;
it lives in ``store`` because nothing outside it imports dulwich, but it reads no repository.

Where dulwich's own defaults differ from git, git wins (measured, docs/decisions.md):

- a file changed on one side only takes that side, mode included: a one-sided exec-bit
  change is taken (dulwich's tree merge reports any mode difference as a conflict); an
  exec bit changed differently on both sides is a conflict;
- a binary file (a NUL in its first 8000 bytes, git's ``buffer_is_binary``) is never
  line-merged: changed on both sides differently it is a conflict (``merge_blobs``
  line-merges it);
- a conflict is a region merge3 reports as conflicting, never a search of the output for
  ``<<<<<<< ours`` (``merge_blobs`` does that, so a file that documents conflict markers
  would conflict falsely); no marker is produced but by ``merge_marked``, which
  ``update --merge-conflicts`` asks for;
- lines end at ``\\n`` only, as in git (``bytes.splitlines`` would also split at ``\\r``).

Added on one side: added. Deleted on one side and unchanged on the other: deleted. Changed
on one side and deleted on the other: a conflict. The same change on both sides: clean.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, NamedTuple

from librarian.core.markers import MARKER_OURS, MARKER_SPLIT, MARKER_THEIRS

#: git's ``FIRST_FEW_BYTES``: how far ``buffer_is_binary`` looks for a NUL
BINARY_PROBE = 8000

ConflictKind = Literal["content", "binary", "mode", "added-both", "edited-removed",
                       "removed-edited", "file-directory"]


@dataclass(frozen=True, slots=True)
class FileVersion:
    mode: int  # 0o100644 or 0o100755
    data: bytes


@dataclass(frozen=True, slots=True)
class Hunk:
    """One overlapping region: 1-based first line and the lines on each side."""

    base_line: int
    base: bytes
    ours_line: int
    ours: bytes
    theirs_line: int
    theirs: bytes


@dataclass(frozen=True, slots=True)
class FileConflict:
    path: str
    kind: ConflictKind
    detail: str  # one line, e.g. "changed locally, removed upstream"
    hunks: tuple[Hunk, ...] = ()


@dataclass(frozen=True, slots=True)
class ItemMerge:
    """The merged files (None when anything conflicts) and every conflict, path order."""

    files: Mapping[str, FileVersion] | None
    conflicts: tuple[FileConflict, ...]

    @property
    def clean(self) -> bool:
        return not self.conflicts


def is_binary(data: bytes) -> bool:
    """git's rule: a NUL among the first 8000 bytes."""
    return b"\0" in data[:BINARY_PROBE]


def split_lines(data: bytes) -> list[bytes]:
    """Lines ending at ``\\n`` (kept), the last one possibly without it."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def merge_files(
    base: Mapping[str, FileVersion],
    ours: Mapping[str, FileVersion],
    theirs: Mapping[str, FileVersion],
) -> ItemMerge:
    merged: dict[str, FileVersion] = {}
    conflicts: list[FileConflict] = []
    for path in sorted(set(base) | set(ours) | set(theirs)):
        result = _merge_path(path, base.get(path), ours.get(path), theirs.get(path))
        if isinstance(result, list):
            conflicts.extend(result)
        elif result is not None:
            merged[path] = result
    conflicts.extend(_file_directory_conflicts(merged))
    if conflicts:
        return ItemMerge(None, tuple(sorted(conflicts, key=lambda c: c.path)))
    return ItemMerge(MappingProxyType(merged), ())


def _merge_path(
    path: str, base: FileVersion | None, ours: FileVersion | None, theirs: FileVersion | None
) -> FileVersion | None | list[FileConflict]:
    if ours == theirs:
        return ours  # unchanged, or the same change (deletion included) on both sides
    if ours == base:
        return theirs  # only upstream changed it (or added or removed it)
    if theirs == base:
        return ours  # only the local edit changed it
    if ours is None:
        return [FileConflict(path, "removed-edited", "removed locally, changed upstream")]
    if theirs is None:
        return [FileConflict(path, "edited-removed", "changed locally, removed upstream")]
    conflicts: list[FileConflict] = []
    mode = _merge_mode(path, base, ours, theirs, conflicts)
    data = _merge_data(path, base, ours.data, theirs.data, conflicts)
    if conflicts or data is None:
        return conflicts
    return FileVersion(mode, data)


def _merge_mode(path: str, base: FileVersion | None, ours: FileVersion, theirs: FileVersion,
                conflicts: list[FileConflict]) -> int:
    if ours.mode == theirs.mode:
        return ours.mode
    if base is not None and ours.mode == base.mode:
        return theirs.mode
    if base is not None and theirs.mode == base.mode:
        return ours.mode
    conflicts.append(FileConflict(
        path, "mode", f"mode {ours.mode:o} locally, {theirs.mode:o} upstream"
        + (f" (was {base.mode:o})" if base is not None else "")))
    return ours.mode


def _merge_data(path: str, base: FileVersion | None, ours: bytes, theirs: bytes,
                conflicts: list[FileConflict]) -> bytes | None:
    base_data = base.data if base is not None else b""
    if ours == theirs:
        return ours
    if base is not None and ours == base_data:
        return theirs
    if base is not None and theirs == base_data:
        return ours
    if is_binary(base_data) or is_binary(ours) or is_binary(theirs):
        conflicts.append(FileConflict(path, "binary", "binary file changed on both sides"))
        return None
    data, hunks = merge_lines(base_data, ours, theirs)
    if hunks:
        if base is None:
            conflicts.append(FileConflict(path, "added-both",
                                          "added locally and upstream with other content",
                                          hunks))
        else:
            conflicts.append(FileConflict(path, "content", "changed on both sides in "
                                          f"overlapping lines ({len(hunks)} hunk(s))", hunks))
        return None
    return data


class _Conflict(NamedTuple):
    """A conflicting region of a line merge: each side's lines and the line (1-based) of
    its file where they start."""

    base: list[bytes]
    ours: list[bytes]
    theirs: list[bytes]
    base_at: int
    ours_at: int
    theirs_at: int


def _regions(base: bytes, ours: bytes, theirs: bytes) -> Iterator[list[bytes] | _Conflict]:
    """merge3's regions of three texts, in order: a run of settled lines, or a conflict."""
    # Imported on first use: dulwich.merge and merge3 cost ~5 ms, which only an update
    # that actually line-merges a file should pay (inspect and `source` import this module).
    from dulwich.merge import make_merge3

    z, a, b = split_lines(base), split_lines(ours), split_lines(theirs)
    for region in make_merge3(z, a, b).merge_regions():
        what = region[0]
        if what == "unchanged":
            yield z[region[1]:region[2]]
        elif what in ("a", "same"):
            yield a[region[1]:region[2]]
        elif what == "b":
            yield b[region[1]:region[2]]
        elif len(region) == 7:  # a conflict: base, ours and theirs ranges
            _, zs, ze, as_, ae, bs, be = region
            yield _Conflict(z[zs:ze], a[as_:ae], b[bs:be], zs + 1, as_ + 1, bs + 1)


def merge_lines(base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes, tuple[Hunk, ...]]:
    """The line merge of three texts: (merged bytes, ()) or (b"", the conflicting hunks)."""
    out: list[bytes] = []
    hunks: list[Hunk] = []
    for region in _regions(base, ours, theirs):
        if isinstance(region, _Conflict):
            hunks.append(Hunk(region.base_at, _join(region.base), region.ours_at,
                              _join(region.ours), region.theirs_at, _join(region.theirs)))
        else:
            out.extend(region)
    if hunks:
        return b"", tuple(hunks)
    return b"".join(out), ()


def _join(lines: Sequence[bytes]) -> bytes:
    return b"".join(lines)


def _file_directory_conflicts(merged: Mapping[str, FileVersion]) -> list[FileConflict]:
    """A path that is a file on one side and a directory on the other (git's D/F case)."""
    out = []
    for path in merged:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            prefix = "/".join(parts[:depth])
            if prefix in merged:
                out.append(FileConflict(prefix, "file-directory",
                                        f"a file on one side, a directory holding {path} on "
                                        "the other"))
    return list({c.path: c for c in out}.values())


def describe_hunk(hunk: Hunk, limit: int = 60) -> str:
    """One line for a hunk: where it is and a short excerpt of each side."""

    def excerpt(data: bytes) -> str:
        lines = data.decode("utf-8", "replace").splitlines()
        text = " | ".join(line.strip() for line in lines) or "(nothing)"
        return text if len(text) <= limit else text[: limit - 1] + "…"

    return (f"{_where(hunk.ours_line, hunk.ours)} locally {excerpt(hunk.ours)!r} vs "
            f"{_where(hunk.theirs_line, hunk.theirs)} upstream {excerpt(hunk.theirs)!r}")


def _where(first: int, data: bytes) -> str:
    count = len(split_lines(data))
    if count == 0:
        return f"nothing at line {first}"
    return f"line {first}" if count == 1 else f"lines {first}-{first + count - 1}"


#: The kinds of conflict a file with markers can hold; any other keeps the refusal.
MARKABLE = frozenset({"content", "added-both"})


def merge_marked(
    base: Mapping[str, FileVersion],
    ours: Mapping[str, FileVersion],
    theirs: Mapping[str, FileVersion],
) -> dict[str, FileVersion] | None:
    """The files of a merge with every conflicting text file written as git writes it,
    each overlapping region between ``<<<<<<< local``, ``=======`` and ``>>>>>>>
    upstream`` lines (the mode: ours); None when a conflict is of a kind no file can
    show (binary, mode, removed on one side, file against directory)."""
    merged: dict[str, FileVersion] = {}
    for path in sorted(set(base) | set(ours) | set(theirs)):
        result = _merge_path(path, base.get(path), ours.get(path), theirs.get(path))
        if isinstance(result, list):
            if any(c.kind not in MARKABLE for c in result):
                return None
            mine, other, old = ours.get(path), theirs.get(path), base.get(path)
            assert mine is not None and other is not None
            merged[path] = FileVersion(mine.mode, _marked_lines(
                old.data if old is not None else b"", mine.data, other.data))
        elif result is not None:
            merged[path] = result
    if _file_directory_conflicts(merged):
        return None
    return merged


def _marked_lines(base: bytes, ours: bytes, theirs: bytes) -> bytes:
    out: list[bytes] = []
    for region in _regions(base, ours, theirs):
        if isinstance(region, _Conflict):
            out += [MARKER_OURS + b"\n", *_ended(region.ours), MARKER_SPLIT + b"\n",
                    *_ended(region.theirs), MARKER_THEIRS + b"\n"]
        else:
            out.extend(region)
    return b"".join(out)


def _ended(lines: Sequence[bytes]) -> list[bytes]:
    """A side's lines, the last ending in a newline so the marker after it is a line."""
    out = list(lines)
    if out and not out[-1].endswith(b"\n"):
        out[-1] += b"\n"
    return out
