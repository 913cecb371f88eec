"""The quarantine a fetched pack waits in until it is judged, as git's receive-pack does.

A fetch's pack is indexed into ``objects/incoming-librarian-<random>/pack``: an object
store of its own whose alternate is the library's (so a thin pack's deltas against held
objects resolve), invisible to the library's store, to git and to ``git fsck``. There it is
judged (``transfer``: git's fsck rules, closure); only a pack that passes is moved into
``objects/pack``, the pack file first and its index last (a reader never finds an index
without its pack: git's tmp-objdir order), then fsynced. A refused pack is deleted with
the directory, so nothing it held ever entered the library's object store and a later
fetch negotiates as if it had never come.

Killed at any instant, the directory is left behind; ``sweep`` (recovery's leftovers sweep)
deletes it, and a pack already moved whose index was not (a kill between the two renames),
which no ref can name yet: refs move only after the whole pack is in.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

from dulwich.object_store import DiskObjectStore
from dulwich.pack import Pack

from librarian.core.fsutil import fsync_dir, fsync_file

PREFIX = "incoming-librarian-"  # git's own quarantine is tmp_objdir-incoming-*
_LAST = (".idx",)  # moved last: an index makes its pack visible


class Quarantine:
    """``with Quarantine(objects_dir, fmt) as q``: ``q.receive`` a pack, judge it, then
    ``q.admit`` it; leaving the block deletes whatever was not admitted."""

    def __init__(self, objects_dir: Path, object_format: Any) -> None:
        self.objects_dir = objects_dir
        self._format = object_format
        self.path = objects_dir  # set on entry
        self._store: DiskObjectStore | None = None

    def __enter__(self) -> Quarantine:
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=self.objects_dir))
        (self.path / "pack").mkdir()
        self._store = DiskObjectStore(str(self.path), alternates=[str(self.objects_dir)],
                                      object_format=self._format)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._store is not None:
            self._store.close()
        shutil.rmtree(self.path, ignore_errors=True)

    def receive(self, read: Any) -> Pack:
        """Index the pack ``read`` gives (thin or not) into the quarantine."""
        assert self._store is not None
        return self._store.add_thin_pack(read, None)

    def admit(self) -> list[Path]:
        """Move the judged pack into ``objects/pack`` and make it durable; the paths moved
        (none when the library already held a pack of exactly these objects)."""
        assert self._store is not None
        self._store.close()
        target = self.objects_dir / "pack"
        target.mkdir(exist_ok=True)
        files = sorted((p for p in (self.path / "pack").iterdir() if p.is_file()),
                       key=lambda p: (p.suffix in _LAST, p.name))
        if any((target / p.name).exists() for p in files if p.suffix in _LAST):
            return []  # the same objects are packed already (a pack is named by them)
        moved = []
        for path in files:
            path.rename(target / path.name)
            moved.append(target / path.name)
        for path in moved:
            fsync_file(path)
        fsync_dir(target)
        return moved


def sweep(objects_dir: Path) -> list[Path]:
    """Remove what a killed fetch left in quarantine; the paths removed."""
    removed: list[Path] = []
    for directory in sorted(objects_dir.glob(PREFIX + "*")):
        if directory.is_symlink() or not directory.is_dir():
            continue
        for index in (directory / "pack").glob("pack-*.idx"):
            moved = objects_dir / "pack" / (index.stem + ".pack")
            if moved.is_file() and not (objects_dir / "pack" / index.name).exists():
                moved.unlink()  # moved without its index: killed between the renames
                removed.append(moved)
        shutil.rmtree(directory, ignore_errors=True)
        removed.append(directory)
    return removed
