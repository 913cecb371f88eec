"""One exception root, one subclass per exit code (spec §3.4).

The command line maps these to exit codes and the one-line ``librarian: error: …`` format
in exactly one place (``librarian.cli.main``); the library raises them and never prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class LibrarianError(Exception):
    """Root of every error librarian reports to a user."""

    exit_code = 1

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        path: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.path = path
        #: structured context for ``--json`` (e.g. an update's plan); never needed to act
        self.details = dict(details) if details else {}

    def __str__(self) -> str:
        return self.message


class UsageError(LibrarianError):
    """Bad input or usage: invalid name or manifest, unknown item, not a library, refused
    content."""

    exit_code = 2


class ConflictError(LibrarianError):
    """Name taken, local edits in the way, branch moved, lock held."""

    exit_code = 3


class TrustError(LibrarianError):
    """Signature, digest, rollback or expiry failure."""

    exit_code = 4


class GateRefusal(LibrarianError):
    """The execution gate refused to run something."""

    exit_code = 5


class ValidationError(UsageError):
    """Content or a manifest failed validation; ``problems`` lists every finding."""

    def __init__(
        self,
        message: str,
        *,
        problems: tuple[str, ...] = (),
        hint: str | None = None,
        path: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint, path=path,
                         details={"problems": list(problems)} if problems else None)
        self.problems = problems
