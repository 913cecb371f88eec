"""``hooks install``: copy the project's git hooks into the library (copies, never links).

A hook is written with the interpreter of the librarian installing it in place of
``@LIBRARIAN_PYTHON@``, so it runs that librarian whatever ``PATH`` the commit has."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from librarian.core.fsutil import atomic_write
from librarian.core.resources import hooks_dir
from librarian.errors import ConflictError
from librarian.library import Library


def install_hooks(library: Library, *, force: bool = False) -> list[str]:
    """Install every hook; an existing different hook is kept unless ``force``."""
    target_dir = library.git_dir / "hooks"
    target_dir.mkdir(exist_ok=True)
    sources = sorted(p for p in hooks_dir().iterdir() if p.is_file() and not p.name.startswith(
        ("_", ".")) and p.suffix != ".py")
    rendered = {source.name: render_hook(source) for source in sources}
    for source in sources:
        target = target_dir / source.name
        if target.exists() and not force and target.read_bytes() != rendered[source.name]:
            raise ConflictError(
                f"{target} exists and differs from librarian's hook",
                hint="pass --force to replace it",
                path=str(target),
            )
    installed = []
    for source in sources:
        atomic_write(target_dir / source.name, rendered[source.name], mode=0o755)
        installed.append(source.name)
    return installed


def render_hook(source: Path, python: str | None = None) -> bytes:
    """The hook as installed: ``@LIBRARIAN_PYTHON@`` is this interpreter, shell-quoted."""
    interpreter = shlex.quote(python or sys.executable)
    return source.read_bytes().replace(b"@LIBRARIAN_PYTHON@", interpreter.encode())
