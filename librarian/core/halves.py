"""Work split over two processors: the first half in a forked child, the rest here.

A status of a large library is mostly ``lstat`` calls; Python threads do not spread them
(each call hands the GIL over: two threads took 1.5 times as long as one, measured), but a
second process does, as git's preload threads do. ``in_halves(count, theirs, mine)``
forks a child that runs ``theirs(0, half)`` while this process runs ``mine(half, count)``,
and returns the bytes the child made of its half (the caller frames them). The child
takes no lock and writes no file; it sends its bytes down a pipe and leaves by
``os._exit``, so nothing of this process (buffers, ``atexit``, open files) is flushed or
closed twice. One caller: a status's look ahead (``cache.statcache``), which pays where
the stat cache cannot answer (a status of 10,000 items without it: 8.7 s split, 12.4 s
not; docs/performance.md, "Speed devices kept").

Nothing here is needed for correctness: where fork is missing, another thread runs (fork
would copy its locks held), only one processor is ours, or there is too little work,
nothing is done and None is returned; where the child fails (an exception, a signal, an
exit before its last byte), this process's half is done and None is returned. The caller
then does the child's half itself, as it would have without this module.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading
from collections.abc import Callable

#: Fewer units than this are not split: the fork, pipe and wait cost 2.1-2.3 ms from a
#: 34 MiB status process, and the copy-on-write faults that follow (each process's first
#: write to a page they share) 30-110 ms of CPU over a 10,000-item status; at 1,000
#: items a split status was no faster (two batches of 21 and 25 runs, quartiles
#: overlapping, on this machine).
LEAST = 2000


def processors() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def can_split() -> bool:
    return hasattr(os, "fork") and processors() > 1 and threading.active_count() == 1


def in_halves(count: int, theirs: Callable[[int, int], bytes],
              mine: Callable[[int, int], None]) -> bytes | None:
    """``theirs(0, count // 2)`` in a forked child, its bytes returned, while ``mine(count
    // 2, count)`` runs here; None (and nothing done) where splitting does not pay, None
    (and only ``mine`` done) where the child fails."""
    if count < LEAST or not can_split():
        return None
    half = count // 2
    parent = os.getpid()
    read_end, write_end = os.pipe()
    # A signal that came in during fork would be raised as fork returns, before the child's
    # pid is known to anyone who could kill and reap it: they wait until it is.
    held = _hold_signals()
    try:
        pid = os.fork()
    except OSError:
        _release_signals(held)
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:  # the child: its half, down the pipe, and out without any cleanup
        status = 1
        try:
            gc.disable()  # a collection would touch (and so copy) every page of the heap
            os.close(read_end)
            _die_with(parent)
            _release_signals(held)
            made = theirs(0, half)
            # its length first: a child that ends before its last byte is told apart
            view = memoryview(len(made).to_bytes(8, "little") + made)
            while view:
                view = view[os.write(write_end, view):]
            status = 0
        finally:
            os._exit(status)
    try:
        _release_signals(held)  # one held since is raised here, and the child reaped
        os.close(write_end)
        write_end = -1
        mine(half, count)
        made = _read_all(read_end)
    finally:
        if write_end >= 0:
            os.close(write_end)
        os.close(read_end)
        succeeded = _reap(pid)
    whole = succeeded and len(made) >= 8 and int.from_bytes(made[:8], "little") == (
        len(made) - 8)
    return made[8:] if whole else None


#: The signals a user or a supervisor sends (Ctrl-C, a hang-up, a stop request).
_ASYNC_SIGNALS = frozenset(getattr(signal, name) for name in (
    "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name))


def _hold_signals() -> set[int | signal.Signals] | None:
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, _ASYNC_SIGNALS)


def _release_signals(held: set[int | signal.Signals] | None) -> None:
    if held is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _die_with(parent: int) -> None:
    """Linux: the child is killed when this process dies (a SIGKILL leaves no one to kill
    it), rather than reading on for its half while holding the caller's pipes open."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes  # here only: the child pays for it, not every status

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL))
    if os.getppid() != parent:  # it died before the request was made
        os._exit(1)


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _reap(pid: int) -> bool:
    """Wait for the child: whether it exited 0. One still running (this process was
    interrupted before the child's last byte) is killed; the wait is not interrupted (a
    second Ctrl-C would leave a zombie), a signal held meanwhile is raised after it."""
    held = _hold_signals()
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return False
    finally:
        _release_signals(held)
    return os.waitstatus_to_exitcode(status) == 0
