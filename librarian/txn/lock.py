"""One mutation lock per library: ``.git/librarian/lock``.

``flock`` is released by the kernel when its holder dies, so a crashed command can never
wedge the library. The holder writes its pid into the file; a second writer waits for it
(``LIBRARIAN_LOCK_WAIT`` seconds, 30 by default; 0: do not wait), saying on a terminal
whom it waits for, then gets a ConflictError (exit 3) naming the holder. Before the lock
only ``.git``, ``.git/librarian`` and its entries are checked for links: its folders, which
another command may be removing (``stage``, ``trash``), are looked into under the lock.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from librarian.core import progress
from librarian.errors import ConflictError, UsageError
from librarian.library import refuse_linked_state

DEFAULT_WAIT_SECONDS = 30.0
WAIT_VARIABLE = "LIBRARIAN_LOCK_WAIT"
#: Polling interval while waiting: short, so waiters follow each other closely.
POLL_SECONDS = 0.01


def lock_wait() -> float:
    """The wait the user asked for (``LIBRARIAN_LOCK_WAIT``), else the default."""
    given = os.environ.get(WAIT_VARIABLE, "").strip()
    if not given:
        return DEFAULT_WAIT_SECONDS
    try:
        seconds = float(given)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= 24 * 3600:
        raise UsageError(f"{WAIT_VARIABLE}={given!r} is not a number of seconds (0 to 86400)")
    return seconds


def holder_of(fd: int) -> str:
    """Who holds the lock, as the waiter says it: ``pid N (COMMAND LINE)`` where readable."""
    pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    if not pid.isdigit():
        return "another librarian command"
    try:
        words = Path("/proc", pid, "cmdline").read_bytes()[:200].split(b"\0")  # Linux
    except OSError:
        return f"pid {pid}"
    shown = " ".join(w.decode("utf-8", "replace") for w in words if w)
    return f"pid {pid} ({shown[:80]})" if shown else f"pid {pid}"


@contextlib.contextmanager
def library_lock(path: Path, *, wait: float | None = None) -> Iterator[None]:
    """Hold the library's mutation lock; ``wait``: seconds to wait for it (None: the
    user's setting)."""
    git_dir = next(p for p in path.parents if p.name == ".git")
    refuse_linked_state(git_dir, path.parent, folders=())
    patience = lock_wait() if wait is None else wait
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        refuse_linked_state(git_dir, path.parent, folders=())  # a link planted since: name it
        raise
    acquired = False
    try:
        _acquire(fd, path, patience)
        acquired = True
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        refuse_linked_state(git_dir, path.parent)  # under the lock: nobody removes its folders
        yield
    finally:
        if acquired:  # a waiter must not erase the holder's pid
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
        os.close(fd)  # closing releases the flock


def _acquire(fd: int, path: Path, patience: float) -> None:
    deadline = time.monotonic() + patience
    told = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise ConflictError(
                    f"{holder_of(fd)} is changing this library; waited {patience:g} s",
                    hint=f"wait for it to finish and run the command again (or set "
                         f"{WAIT_VARIABLE} to wait longer)",
                    path=str(path),
                ) from None
            if not told:
                progress.phase("wait", None)
                progress.note(f"waiting for {holder_of(fd)}")
                told = True
            time.sleep(POLL_SECONDS)
