"""One mutation lock per library: ``.git/librarian/lock``.

``flock`` is released by the kernel when its holder dies, so a crashed command can never
wedge the library; the pid written into the file only serves the error message. A second
writer waits up to ``wait`` seconds, then gets a ConflictError (exit 3).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from librarian.errors import ConflictError
from librarian.library import refuse_linked_state

DEFAULT_WAIT_SECONDS = 2.0


@contextlib.contextmanager
def library_lock(path: Path, *, wait: float = DEFAULT_WAIT_SECONDS) -> Iterator[None]:
    git_dir = next(p for p in path.parents if p.name == ".git")
    refuse_linked_state(git_dir, path.parent)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        refuse_linked_state(git_dir, path.parent)  # a link planted since: name it
        raise
    acquired = False
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                acquired = True
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
                    raise ConflictError(
                        f"another librarian command (pid {holder}) is changing this library",
                        hint="wait for it to finish and run the command again",
                        path=str(path),
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        if acquired:  # a waiter must not erase the holder's pid
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
        os.close(fd)  # closing releases the flock
