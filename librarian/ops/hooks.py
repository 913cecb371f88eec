"""``hooks install``: copy the project's git hooks into the library (copies, never links);
for a library in a folder of a project, into the project's repository.

A hook is written with the interpreter of the librarian installing it in place of
``@LIBRARIAN_PYTHON@``, so it runs that librarian whatever ``PATH`` the commit has.

The hooks go where git runs them: ``core.hooksPath`` when set (the library's own git
configuration first, then the user's and the system's, as git reads them; a relative
path is relative to the work tree), else ``.git/hooks``. A directory outside the library
is refused rather than written (it may be shared by every repository of the user), and
so is any symbolic link on the way: librarian never writes through one. A hook that
differs from librarian's is replaced only with ``--force``, and then kept beside it as
``<hook>.backup`` (``.backup-2``, … when that is taken)."""

from __future__ import annotations

import os
import shlex
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from librarian.core.fsutil import atomic_write
from librarian.core.resources import hooks_dir
from librarian.errors import ConflictError, UsageError
from librarian.git import hooks_path
from librarian.library import Library

__all__ = ["HooksInstalled", "hooks_directory", "install_hooks", "render_hook"]


@dataclass(frozen=True, slots=True)
class HooksInstalled:
    """What ``hooks install`` did: the hooks written, where, and the backups it made."""

    installed: tuple[str, ...]
    path: str
    backups: tuple[str, ...] = ()


def hooks_directory(library: Library) -> Path:
    """Where git runs this library's hooks; a UsageError when librarian must not write
    there (outside the library's repository, or through a symbolic link)."""
    configured = hooks_path(library.git_dir)
    root = Path(os.path.normpath(library.repo_root.absolute()))
    if configured is None:
        target = library.git_dir / "hooks"
    else:
        target = Path(os.path.normpath(root / Path(configured).expanduser()))
        if target != root and root not in target.parents:
            raise UsageError(
                f"core.hooksPath is {configured!r} ({target}), outside the library: git runs "
                "hooks from there, and librarian installs only inside the library",
                hint=f"unset it (git -C {root} config --unset core.hooksPath) or copy "
                "hooks/pre-commit there yourself",
                path=str(target))
    relative = target.relative_to(root)
    for depth in range(1, len(relative.parts) + 1):
        _refuse_link(root.joinpath(*relative.parts[:depth]))
    return target


def _refuse_link(path: Path) -> None:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise UsageError(
            f"{path} is a symbolic link (to {path.readlink()}); librarian never writes "
            "hooks through one",
            hint=f"replace it with a real directory (rm {path}; mkdir {path}), then retry",
            path=str(path))
    if not stat.S_ISDIR(mode):
        raise UsageError(f"{path} is not a directory", path=str(path))


def _backup_name(target: Path) -> Path:
    candidate = target.with_name(f"{target.name}.backup")
    number = 1
    while os.path.lexists(candidate):
        number += 1
        candidate = target.with_name(f"{target.name}.backup-{number}")
    return candidate


def install_hooks(library: Library, *, force: bool = False) -> HooksInstalled:
    """Install every hook; an existing different hook is kept unless ``force``, and then
    backed up beside it."""
    target_dir = hooks_directory(library)
    sources = sorted(p for p in hooks_dir().iterdir() if p.is_file() and not p.name.startswith(
        ("_", ".")) and p.suffix != ".py")
    rendered = {source.name: render_hook(source, folder=library.prefix) for source in sources}
    differing = []
    for source in sources:
        target = target_dir / source.name
        if os.path.lexists(target) and (
                target.is_symlink() or not target.is_file()
                or target.read_bytes() != rendered[source.name]):
            if not force:
                raise ConflictError(
                    f"{target} exists and differs from librarian's hook",
                    hint="pass --force to replace it (yours is kept as "
                    f"{_backup_name(target).name})",
                    path=str(target))
            differing.append(target)
    target_dir.mkdir(parents=True, exist_ok=True)
    backups = []
    for target in differing:
        backup = _backup_name(target)
        target.rename(backup)  # the hook itself, a link as a link: nothing followed
        backups.append(str(backup))
    installed = []
    for source in sources:
        atomic_write(target_dir / source.name, rendered[source.name], mode=0o755)
        installed.append(source.name)
    return HooksInstalled(tuple(installed), str(target_dir), tuple(backups))


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
