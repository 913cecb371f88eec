"""Reading and writing item directories in the work tree.

Hashing here is raw (every regular file, nothing ignored) because it answers "does the work
tree still hold what was committed?", the question `git status` answers too.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from librarian.core.digest import TreeLeaf, blob_id, format_digest, tree_id, tree_ids
from librarian.core.fsutil import fsync_dir, write_file_durably
from librarian.core.model import ItemFile


@dataclass(frozen=True, slots=True)
class WorkFile:
    path: str  # posix, relative to the item directory
    abspath: Path
    stat: os.stat_result


class NotRegularFile(Exception):
    """A symlink or special file where only regular files belong."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path} is not a regular file")
        self.path = path


def iter_work_files(root: Path, prefix: str = "") -> Iterator[WorkFile]:
    """Regular files below ``root`` (lstat'ed); raises NotRegularFile on anything else."""
    with os.scandir(root) as entries:
        for entry in entries:
            path = f"{prefix}{entry.name}"
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                yield from iter_work_files(Path(entry.path), path + "/")
            elif stat.S_ISREG(st.st_mode):
                yield WorkFile(path, Path(entry.path), st)
            else:
                raise NotRegularFile(Path(entry.path))


def is_executable(st: os.stat_result) -> bool:
    return bool(st.st_mode & stat.S_IXUSR)


def read_work_files(root: Path) -> tuple[ItemFile, ...]:
    files = [
        ItemFile(f.path, is_executable(f.stat), f.abspath.read_bytes())
        for f in iter_work_files(root)
    ]
    return tuple(sorted(files, key=lambda f: f.path))


@dataclass(frozen=True, slots=True)
class ItemHash:
    """Both ids of a work-tree directory: git's SHA-1 tree id and the SHA-256 digest."""

    tree_sha1: bytes  # hex, as the library's repository stores it
    digest: str  # sha256:…


def hash_files(files: tuple[ItemFile, ...]) -> ItemHash:
    tree_sha1, _, digest = item_ids(files)
    return ItemHash(tree_sha1, digest)


def item_ids(files: Sequence[ItemFile]) -> tuple[bytes, list[bytes], str]:
    """git's tree id (hex) of ``files``, each file's raw blob id, and the digest
    (``sha256:…``): the paths nested once for both trees."""
    sha1, blobs, sha256 = tree_ids([(f.path, f.executable, f.data) for f in files])
    return sha1.hex().encode(), blobs, format_digest(sha256)


def git_ids(files: tuple[ItemFile, ...]) -> tuple[bytes, list[bytes]]:
    """git's tree id (hex) of ``files`` alone, what binds them to a stored tree (and so to
    the digest computed from that tree's bytes), and each file's raw blob id."""
    blobs = [blob_id(f.data, "sha1") for f in files]
    leaves = [TreeLeaf(f.path, f.executable, b) for f, b in zip(files, blobs, strict=True)]
    return tree_id(leaves, "sha1").hex().encode(), blobs


def hash_work_dir(root: Path) -> ItemHash | None:
    """Ids of the directory's content; None when it holds no files (git would not store
    it). Raises NotRegularFile for symlinks and special files."""
    files = read_work_files(root)
    return hash_files(files) if files else None


def write_files(target: Path, files: tuple[ItemFile, ...]) -> list[os.stat_result]:
    """Create ``target`` (must not exist) holding ``files``, every file and directory
    fsynced, so a rename of ``target`` later publishes complete content; each file's stat,
    in the order of ``files``. Paths are joined as strings: an install writes 50,000."""
    target.mkdir(parents=True)
    root = str(target)
    created = [""]  # directories relative to target, each after its parent
    made = {""}
    stats = []
    for item_file in files:
        directory = item_file.path.rpartition("/")[0]
        if directory not in made:
            parts = directory.split("/")
            for depth in range(1, len(parts) + 1):
                chain = "/".join(parts[:depth])
                if chain not in made:
                    os.mkdir(f"{root}/{chain}")  # noqa: PTH102 (a Path each: 40,000)
                    made.add(chain)
                    created.append(chain)
        stats.append(write_file_durably(f"{root}/{item_file.path}", item_file.data,
                                        executable=item_file.executable))
    for directory in reversed(created):
        fsync_dir(f"{root}/{directory}" if directory else root)
    return stats
