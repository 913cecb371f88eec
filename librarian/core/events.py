"""Retention events: commit messages with git trailers, and reading them back."""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

EVENTS = (
    "init retain promote discard defer revise retire restore expose withdraw hide show "
    "resident source-add source-set source-remove update resolve"
).split()

_TRAILER_RE = re.compile(r"^(Librarian-[A-Za-z-]+): ?(.*)$")


@dataclass(frozen=True, slots=True)
class Event:
    """A librarian commit's subject and trailers, in the order they were written."""

    subject: str
    trailers: tuple[tuple[str, str], ...]

    def get(self, key: str) -> str | None:
        for name, value in self.trailers:
            if name == key:
                return value
        return None

    def values(self, key: str) -> list[str]:
        """Every value of ``key``, in order (a sequence field repeats its key)."""
        return [value for name, value in self.trailers if name == key]

    @property
    def kind(self) -> str | None:
        return self.get("Librarian-Event")


def _one_line(value: str) -> str:
    # Trailer values are single lines; a newline would forge further trailers.
    return " ".join(value.split())


TrailerValue = str | Sequence[str] | None


def trailers(event: str, *pairs: tuple[str, str], **fields: TrailerValue) -> tuple[
        tuple[str, str], ...]:
    """The trailers of one event: ``Librarian-Event`` first, then ``pairs`` as given
    (short keys, e.g. ``("Source", "team")``), then ``fields`` in order: ``item=`` becomes
    ``Librarian-Item``, ``previous_digest=`` ``Librarian-Previous-Digest``; a sequence
    repeats its key, None leaves it out."""
    out = [("Librarian-Event", event)]
    out += [(f"Librarian-{key}", value) for key, value in pairs]
    for name, value in fields.items():
        key = "Librarian-" + "-".join(part.capitalize() for part in name.split("_"))
        if value is None:
            continue
        values = [value] if isinstance(value, str) else list(value)
        out += [(key, v) for v in values]
    return tuple(out)


#: The agent on whose behalf commits are being made (``librarian mcp``), or None.
_ACTING_AGENT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "librarian_acting_agent", default=None)
AGENT_TRAILER = "Librarian-Agent"


@contextlib.contextmanager
def acting_agent(name: str | None) -> Iterator[None]:
    """Every commit message formatted inside (in this thread or task) names the agent in a
    ``Librarian-Agent`` trailer: the MCP client's own name from ``initialize``."""
    token = _ACTING_AGENT.set(name)
    try:
        yield
    finally:
        _ACTING_AGENT.reset(token)


def format_message(subject: str, trailers: Sequence[tuple[str, str]]) -> str:
    agent = _ACTING_AGENT.get()
    if agent is not None and agent.strip():
        trailers = [*trailers, (AGENT_TRAILER, agent)]
    events = [value for key, value in trailers if key == "Librarian-Event"]
    if len(events) > 1 or (events and events[0] not in EVENTS):
        # A programming error, not user input: the event vocabulary is the spec's.
        raise ValueError(f"a commit carries at most one known event, got {events}")
    lines = [_one_line(subject), ""]
    lines += [f"{key}: {_one_line(value)}" for key, value in trailers]
    return "\n".join(lines) + "\n"


def parse_message(message: str) -> Event | None:
    """The event in a commit message, or None when it is not a librarian commit."""
    lines = message.rstrip("\n").split("\n")
    subject = lines[0] if lines else ""
    block: list[tuple[str, str]] = []
    # Trailers are the last paragraph (as `git interpret-trailers` reads them).
    for line in reversed(lines[1:]):
        if not line.strip():
            break
        match = _TRAILER_RE.match(line)
        if match is None:
            return None
        block.append((match.group(1), match.group(2)))
    block.reverse()
    if not any(key == "Librarian-Event" for key, _ in block):
        return None
    return Event(subject, tuple(block))
