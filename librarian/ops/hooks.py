"""``hooks install``: copy the project's git hooks into the library (copies, never links)."""

from __future__ import annotations

from librarian.core.fsutil import atomic_write
from librarian.core.resources import hooks_dir
from librarian.errors import ConflictError
from librarian.store.library import Library


def install_hooks(library: Library, *, force: bool = False) -> list[str]:
    """Install every hook; an existing different hook is kept unless ``force``."""
    target_dir = library.git_dir / "hooks"
    target_dir.mkdir(exist_ok=True)
    sources = sorted(p for p in hooks_dir().iterdir() if p.is_file() and not p.name.startswith(
        ("_", ".")) and p.suffix != ".py")
    for source in sources:
        target = target_dir / source.name
        if target.exists() and not force and target.read_bytes() != source.read_bytes():
            raise ConflictError(
                f"{target} exists and differs from librarian's hook",
                hint="pass --force to replace it",
                path=str(target),
            )
    installed = []
    for source in sources:
        atomic_write(target_dir / source.name, source.read_bytes(), mode=0o755)
        installed.append(source.name)
    return installed
