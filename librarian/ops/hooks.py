"""``hooks install``: copy the project's git hooks into the library (copies, never links);
for a library in a folder of a project, into the project's repository.

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
    rendered = {source.name: render_hook(source, folder=library.prefix) for source in sources}
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


def render_hook(source: Path, python: str | None = None, folder: str = "") -> bytes:
    """The hook as installed: ``@LIBRARIAN_PYTHON@`` is this interpreter, shell-quoted;
    for a library in a folder of a project (``folder``), the library it names is that
    folder of the repository's top, so it judges only the library's paths."""
    interpreter = shlex.quote(python or sys.executable)
    hook = source.read_bytes().replace(b"@LIBRARIAN_PYTHON@", interpreter.encode())
    if folder:
        hook = hook.replace(b'--library "$top"', b'--library "$top"/' + shlex.quote(
            folder).encode())
    return hook
