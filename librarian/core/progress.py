"""Progress of long work (spec §3.3, §6.6), reported by the library and shown by the CLI.

The library never prints: it names its phases (``phase("plan", total)``) and counts its
steps (``advance()``), and the reporter that the command line installs with ``reporting``
draws them on a terminal. Without a reporter (piped output, ``--json``, library use) each
call is one context-variable read. Phases of one command: ``fetch``, ``plan``, ``stage``,
``install`` (update, outdated), ``check`` (source remove), ``read`` (retain), ``inspect``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sized
from contextvars import ContextVar
from typing import Protocol, TypeVar

T = TypeVar("T")


class Reporter(Protocol):
    def phase(self, name: str, total: int | None) -> None: ...
    def advance(self, count: int) -> None: ...
    def note(self, text: str) -> None: ...
    def close(self) -> None: ...


_current: ContextVar[Reporter | None] = ContextVar("librarian_progress", default=None)


@contextlib.contextmanager
def reporting(reporter: Reporter) -> Iterator[None]:
    token = _current.set(reporter)
    try:
        yield
    finally:
        _current.reset(token)
        reporter.close()


def active() -> bool:
    return _current.get() is not None


def phase(name: str, total: int | None = None) -> None:
    """A new phase of the work (``total`` steps, or unknown)."""
    reporter = _current.get()
    if reporter is not None:
        reporter.phase(name, total)


def advance(count: int = 1) -> None:
    reporter = _current.get()
    if reporter is not None:
        reporter.advance(count)


def finish() -> None:
    """The work is done and the command's output follows: the display leaves the terminal
    now, so no frame of it stays above or beside that output (a later phase draws anew)."""
    reporter = _current.get()
    if reporter is not None:
        reporter.close()


def note(text: str) -> None:
    """A line of detail for the current phase (e.g. the server's fetch messages)."""
    reporter = _current.get()
    if reporter is not None:
        reporter.note(text)


def counted(name: str, items: Iterable[T]) -> Iterator[T]:
    """``items``, one step of phase ``name`` each."""
    reporter = _current.get()
    if reporter is None:
        yield from items
        return
    reporter.phase(name, len(items) if isinstance(items, Sized) else None)
    for item in items:
        yield item
        reporter.advance(1)
