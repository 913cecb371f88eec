"""core/halves.py: the first half of a piece of work done by a forked child while this
process does the rest; whatever the child does wrong costs only its half (None: the
caller does it), never a wrong answer or a child left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from librarian.core import halves

PARENT = os.getpid()
TWO_PROCESSORS = halves.processors() > 1
needs_two = pytest.mark.skipif(not TWO_PROCESSORS, reason="one processor: nothing is forked")


def _by_whom(start: int, stop: int) -> bytes:
    """A byte per unit: 1 if a child did it, 2 if this process did."""
    return bytes(1 if os.getpid() != PARENT else 2 for _ in range(start, stop))


class Mine:
    """This process's half, recorded."""

    def __init__(self) -> None:
        self.done: list[tuple[int, int, int]] = []

    def __call__(self, start: int, stop: int) -> None:
        self.done.append((start, stop, os.getpid()))


def _no_child_left() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.fixture(autouse=True)
def small_least(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(halves, "LEAST", 4)


@needs_two
def test_the_first_half_is_done_by_a_child_the_rest_here() -> None:
    assert halves.can_split()
    mine = Mine()
    assert halves.in_halves(11, _by_whom, mine) == b"\1" * 5
    assert mine.done == [(5, 11, PARENT)]
    assert _no_child_left()


def test_below_the_least_count_nothing_is_done() -> None:
    mine = Mine()
    assert halves.in_halves(3, _by_whom, mine) is None
    assert mine.done == []


def test_with_another_thread_running_nothing_is_forked() -> None:
    # a fork copies the other thread's locks, held or not: never done
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        mine = Mine()
        assert halves.in_halves(10, _by_whom, mine) is None
        assert mine.done == []
    finally:
        stop.set()
        other.join()


def _fails_in_child(start: int, stop: int) -> bytes:
    raise RuntimeError("the child's work fails")


def _killed_in_child(start: int, stop: int) -> bytes:
    os.kill(os.getpid(), signal.SIGKILL)
    return b""


def _exits_early_in_child(start: int, stop: int) -> bytes:
    os.write(1, b"")  # nothing of this process's output is touched
    os._exit(0)


def _oversized_in_child(start: int, stop: int) -> bytes:
    return b"\1" * (1 << 21)  # more than a pipe holds: sent while the parent works


@needs_two
@pytest.mark.parametrize("theirs", [_fails_in_child, _killed_in_child, _exits_early_in_child])
def test_a_failing_child_gives_none_after_this_half_is_done(
        theirs: Callable[[int, int], bytes]) -> None:
    mine = Mine()
    assert halves.in_halves(10, theirs, mine) is None
    assert mine.done == [(5, 10, PARENT)]
    assert _no_child_left()


@needs_two
def test_a_large_answer_arrives_whole() -> None:
    assert halves.in_halves(10, _oversized_in_child, Mine()) == b"\1" * (1 << 21)


@needs_two
def test_an_interrupted_parent_kills_and_reaps_its_child() -> None:
    def sleeps(start: int, stop: int) -> bytes:
        time.sleep(60)  # would outlive the test if it were not killed
        return b""

    def interrupted(start: int, stop: int) -> None:
        raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        halves.in_halves(10, sleeps, interrupted)
    assert time.monotonic() - started < 10
    assert _no_child_left()


@needs_two
def test_a_signal_during_fork_leaves_no_child(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    # CPython raises a signal that came in during fork as fork returns, before the pid is
    # bound: the child was left running its half, un-killed and un-reaped
    finished = tmp_path / "finished"
    real_fork = os.fork

    def fork_then_interrupted() -> int:
        pid = real_fork()
        if pid:
            signal.raise_signal(signal.SIGINT)  # as if Ctrl-C had come during the fork
        return pid

    def theirs(start: int, stop: int) -> bytes:
        time.sleep(0.5)
        finished.write_text("worked on\n")
        return bytes(stop - start)

    monkeypatch.setattr(halves.os, "fork", fork_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        halves.in_halves(10, theirs, Mine())
    assert _no_child_left(), "the child was killed and reaped"
    time.sleep(0.7)
    assert not finished.exists()


CHILD_OF_A_KILLED_PARENT = """
import os, signal, sys, time
from librarian.core import halves
halves.LEAST = 2
def theirs(start, stop):
    with open(sys.argv[1], "w") as out:
        out.write(str(os.getpid()))
    time.sleep(30)
    return b""
def mine(start, stop):
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGKILL)
halves.in_halves(10, theirs, mine)
"""


@needs_two
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG: Linux")
def test_the_child_dies_with_a_killed_parent(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    done = subprocess.run([sys.executable, "-c", CHILD_OF_A_KILLED_PARENT, str(pid_file)],
                          timeout=60, check=False)
    assert done.returncode == -signal.SIGKILL
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _running(child):
        time.sleep(0.05)
    assert not _running(child), "not left reading for its half"


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")  # a zombie waits only for its new parent's wait
