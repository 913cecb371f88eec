"""Where the shipped library template and git hooks are.

In a source checkout (or an editable install) they are the top-level ``library-template/``
and ``hooks/``; a regular install carries them inside the package (see pyproject.toml).
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # the librarian package


def _first_existing(*candidates: Path) -> Path:
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"none of {', '.join(map(str, candidates))} exists")


def template_dir() -> Path:
    return _first_existing(_PACKAGE.parent / "library-template", _PACKAGE / "_template")


def hooks_dir() -> Path:
    return _first_existing(_PACKAGE.parent / "hooks", _PACKAGE / "_hooks")


def examples_dir() -> Path:
    return template_dir() / "examples"
