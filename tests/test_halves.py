"""core/halves.py: the first half of a piece of work done by a forked child, and whatever
the child does wrong costs only its units (they come back not done, never wrong)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable

import pytest

from librarian.core import halves

PARENT = os.getpid()
TWO_PROCESSORS = halves.processors() > 1


def _by_whom(start: int, stop: int) -> bytes:
    """A byte per unit: 1 if a child did it, 2 if this process did."""
    return bytes(1 if os.getpid() != PARENT else 2 for _ in range(start, stop))


def _no_child_left() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.fixture(autouse=True)
def small_least(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(halves, "LEAST", 4)


@pytest.mark.skipif(not TWO_PROCESSORS, reason="one processor: nothing is forked")
def test_the_first_half_is_done_by_a_child_the_rest_here() -> None:
    assert halves.can_split()
    assert halves.in_halves(11, _by_whom) == b"\1" * 5 + b"\2" * 6
    assert _no_child_left()


def test_below_the_least_count_nothing_is_forked() -> None:
    assert halves.in_halves(3, _by_whom) == b"\2" * 3


def test_with_another_thread_running_nothing_is_forked() -> None:
    # a fork copies the other thread's locks, held or not: never done
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert halves.in_halves(10, _by_whom) == b"\2" * 10
    finally:
        stop.set()
        other.join()


def _fails_in_child(start: int, stop: int) -> bytes:
    if os.getpid() != PARENT:
        raise RuntimeError("the child's work fails")
    return _by_whom(start, stop)


def _killed_in_child(start: int, stop: int) -> bytes:
    if os.getpid() != PARENT:
        os.kill(os.getpid(), signal.SIGKILL)
    return _by_whom(start, stop)


def _short_in_child(start: int, stop: int) -> bytes:
    return _by_whom(start, stop)[: 2 if os.getpid() != PARENT else None]


@pytest.mark.skipif(not TWO_PROCESSORS, reason="one processor: nothing is forked")
@pytest.mark.parametrize(("work", "child_part"), [
    (_fails_in_child, b"\0" * 5),
    (_killed_in_child, b"\0" * 5),
    (_short_in_child, b"\1\1\0\0\0"),
])
def test_a_failing_child_leaves_its_units_not_done(work: Callable[[int, int], bytes],
                                                   child_part: bytes) -> None:
    assert halves.in_halves(10, work) == child_part + b"\2" * 5
    assert _no_child_left()


@pytest.mark.skipif(not TWO_PROCESSORS, reason="one processor: nothing is forked")
def test_an_interrupted_parent_kills_and_reaps_its_child() -> None:
    def work(start: int, stop: int) -> bytes:
        if os.getpid() != PARENT:
            time.sleep(60)  # would outlive the test if it were not killed
        raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        halves.in_halves(10, work)
    assert time.monotonic() - started < 10
    assert _no_child_left()
