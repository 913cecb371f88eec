"""Work split over two processors: the first half in a forked child, the rest here.

A status of a large library is mostly ``lstat`` calls; Python threads do not spread them
(each call hands the GIL over: two threads took 1.5 times as long as one, measured), but a
second process does, as git's preload threads do. ``in_halves(count, work)`` runs
``work(0, half)`` in a child forked for it and ``work(half, count)`` here at the same time,
and returns both results joined: one byte per unit of work, what ``work`` returns for its
range. The child only reads (the caller's ``work`` must not write or hold a lock); it
sends its bytes down a pipe and leaves by ``os._exit``, so nothing of this process
(buffers, ``atexit``, open files) is flushed or closed twice.

Nothing here is needed for correctness: where fork is missing, another thread runs (fork
would copy its locks), only one processor is ours, or the child fails or sends fewer
bytes than asked, the child's units come back as ``b"\\0"`` ("not worked out"), and the
caller does them itself as it would have without this module.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import threading
from collections.abc import Callable

#: Fewer units than this are done here only: a fork, the child's copy-on-write faults and
#: the pipe cost ~2-5 ms, the lstats of ~1,000 items on this machine.
LEAST = 2000
NOT_DONE = 0


def processors() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def can_split() -> bool:
    return hasattr(os, "fork") and processors() > 1 and threading.active_count() == 1


def in_halves(count: int, work: Callable[[int, int], bytes]) -> bytes:
    """``work(0, count)``, the first half of it done by a forked child where that pays."""
    if count < LEAST or not can_split():
        return work(0, count)
    half = count // 2
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return work(0, count)
    if pid == 0:  # the child: its half, down the pipe, and out without any cleanup
        status = 1
        try:
            gc.disable()  # a collection would touch (and so copy) every page of the heap
            os.close(read_end)
            view = memoryview(work(0, half))
            while view:
                view = view[os.write(write_end, view):]
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    try:
        mine = work(half, count)
        theirs = _read_all(read_end, half)
    finally:
        os.close(read_end)
        _reap(pid)
    if len(theirs) != half:  # the child died or failed: its units are not done
        theirs = theirs[:half] + bytes(half - len(theirs))
    return theirs + mine


def _read_all(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    got = 0
    while got < size:
        chunk = os.read(fd, size - got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _reap(pid: int) -> None:
    """Wait for the child; one still running (this process was interrupted) is killed."""
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
