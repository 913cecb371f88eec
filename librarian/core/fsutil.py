"""Durable, atomic file-system writes and path containment.

Every file librarian writes goes through here: a temporary file in the same directory,
fsync, ``os.replace``, then fsync of the directory, so a crash leaves either the old or the
new content and never a torn file.

Batched durability (git's ``core.fsyncMethod=batch``): inside ``one_sync(anchor)`` the
fsyncs of this module (``fsync_fd``, ``fsync_file``, ``fsync_dir``, ``write_file_durably``,
``atomic_write``) only write; leaving the block normally makes everything written in it
durable with one ``syncfs(2)`` of the file system holding ``anchor`` (``os.sync()`` where
the C library has no syncfs), or, for at most ``SMALL_BATCH`` paths, with an fsync of
each, issued from a few threads at once (the file system commits concurrent fsyncs
together: 22 small files 58 ms one after the other, 10 ms from 8 threads, 22 ms with a
syncfs, which also waits for every other process's dirty data). A caller leaves the
block before the step that makes the writes visible (the branch moving, the journal
going), so the crash guarantees are those of one fsync per file at a fraction of the
cost: 200 small files, on this machine, 265-703 ms with an fsync each, 21-25 ms with one
syncfs (``bench/fsync.py``, docs/performance.md).

``LIBRARIAN_TEST_FSYNC=0`` in the environment (the test suite's switch, as git's
``GIT_TEST_FSYNC``): writes stay atomic (temporary file, rename) but nothing here fsyncs or
syncs the file system. Never for use; docs/testing.md.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path

#: A path as the fsyncs take it: a string where thousands are written (no Path object each).
AnyPath = str | Path
_deferred: ContextVar[list[AnyPath] | None] = ContextVar("librarian_fsync_deferred",
                                                         default=None)
# At most this many deferred paths are fsynced each at the end of a block: a whole
# file-system sync also waits for every other process's dirty data, which on a busy
# machine can cost more than a few dozen fsyncs issued together.
SMALL_BATCH = 48
_FSYNC_THREADS = 8


@contextlib.contextmanager
def one_sync(anchor: Path) -> Iterator[None]:
    """Defer this module's fsyncs to the end of the block (after an exception nothing is
    synced: nothing written in it was made visible). Then a few paths are fsynced one by
    one, more by one sync of the file system holding ``anchor``."""
    if _deferred.get() is not None:  # nested: the outer block syncs
        yield
        return
    paths: list[AnyPath] = []
    token = _deferred.set(paths)
    try:
        yield
    finally:
        _deferred.reset(token)
    unique = list(dict.fromkeys(paths))
    if not unique or not fsync_enabled():
        return
    if len(unique) > SMALL_BATCH or not _fsync_each(unique):
        sync_filesystem(anchor)


def _fsync_each(paths: list[AnyPath]) -> bool:
    """fsync each path (files and directories), from up to ``_FSYNC_THREADS`` threads;
    False if one has gone (then only a sync of the whole file system is sure to cover what
    was written there). Any other error is raised once every thread has stopped."""
    pending = iter(paths)
    take = threading.Lock()
    gone: list[AnyPath] = []
    failed: list[Exception] = []  # whatever a thread raised, raised again here

    def work() -> None:
        while not gone and not failed:
            with take:
                path = next(pending, None)
            if path is None:
                return
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                gone.append(path)
                return
            except Exception as exc:  # not only OSError: a thread's exception is not ours
                failed.append(exc)
                return
            try:
                os.fsync(fd)
            except Exception as exc:
                failed.append(exc)
            finally:
                os.close(fd)

    workers = [threading.Thread(target=work) for _ in range(min(_FSYNC_THREADS, len(paths)))]
    if len(workers) == 1:
        work()
    else:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    if failed:
        raise failed[0]
    return not gone


def fsync_enabled() -> bool:
    """False only under ``LIBRARIAN_TEST_FSYNC=0`` (read at each sync: a test sets it)."""
    return os.environ.get("LIBRARIAN_TEST_FSYNC") != "0"


def fsync_now(fd: int) -> None:
    """fsync one open file now, even inside ``one_sync`` (an append-only log, a tag)."""
    if fsync_enabled():
        os.fsync(fd)


def sync_filesystem(anchor: Path) -> None:
    """Make every write on the file system holding ``anchor`` durable, and wait."""
    if not fsync_enabled():
        return
    syncfs = _syncfs()
    if syncfs is None:
        os.sync()
        return
    fd = os.open(anchor, os.O_RDONLY)
    try:
        if syncfs(fd) != 0:
            import ctypes

            errno = ctypes.get_errno()
            raise OSError(errno, f"syncfs: {os.strerror(errno)}", str(anchor))
    finally:
        os.close(fd)


_SYNCFS: list[Callable[[int], int] | None] = []


def _syncfs() -> Callable[[int], int] | None:
    """libc's syncfs (Linux), looked up once; None elsewhere. ctypes is imported only
    here, by a command that is about to sync."""
    if not _SYNCFS:
        function: Callable[[int], int] | None
        try:
            import ctypes

            libc_syncfs = ctypes.CDLL(None, use_errno=True).syncfs
            libc_syncfs.argtypes = [ctypes.c_int]
            libc_syncfs.restype = ctypes.c_int
            function = libc_syncfs
        except (OSError, AttributeError, ImportError):
            function = None
        _SYNCFS.append(function)
    return _SYNCFS[0]


def _defer(path: AnyPath) -> bool:
    """Inside ``one_sync``: remember ``path`` for the end of the block and say so."""
    paths = _deferred.get()
    if paths is None:
        return False
    paths.append(path)
    return True


def fsync_fd(fd: int, path: AnyPath) -> None:
    """fsync one open file (``path``), or leave it to the enclosing ``one_sync``."""
    if not _defer(path) and fsync_enabled():
        os.fsync(fd)


def fsync_file(path: Path) -> None:
    """fsync a file written by someone else (dulwich's loose objects), or defer it."""
    if _defer(path) or not fsync_enabled():
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: AnyPath) -> None:
    """Make a directory's entries (renames, creations) durable."""
    if _defer(path) or not fsync_enabled():
        return
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_durably(path: AnyPath, data: bytes, *,
                       executable: bool = False) -> os.stat_result:
    """Write ``data`` to a *new* path (no replace semantics needed), fsynced; its stat once
    written (what an lstat gives until the file is changed: a rename of a directory above
    it changes nothing of it)."""
    mode = 0o755 if executable else 0o644
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        st = os.fstat(fd)
        if st.st_mode & 0o7777 != mode:
            # O_CREAT honours the umask; the executable bit is content, so set it exactly
            # (with the usual umask nothing differs: no call for 50,000 files), before
            # the fsync that must cover it.
            os.fchmod(fd, mode)
            st = os.fstat(fd)
        fsync_fd(fd, path)
        return st
    finally:
        os.close(fd)


def read_regular(path: AnyPath) -> bytes | None:
    """The bytes of the regular file at ``path``; None when it is absent, a symlink (never
    followed), anything but a regular file (a FIFO is opened without waiting for a
    writer) or unreadable. For caches, which are only ever a shortcut."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    except OSError:
        return None
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes | bytearray, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` atomically and durably."""
    directory = path.parent
    fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            # deferred: the content is fsynced under its final name, after the rename
            fsync_fd(handle.fileno(), path)
        tmp.chmod(mode)
        tmp.replace(path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    fsync_dir(directory)

def cache_dir_ready(path: Path) -> bool:
    """Whether the directory of the cache file ``path`` (``.git/librarian/cache``) can be
    written in: never created in a non-library (no ``.git/librarian``), never written
    through when it is a link."""
    if not path.parent.parent.is_dir():
        return False
    try:
        path.parent.mkdir(exist_ok=True)
        return stat.S_ISDIR(path.parent.lstat().st_mode)
    except OSError:
        return False
