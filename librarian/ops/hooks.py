"""``hooks install``: copy the project's git hooks into the library (copies, never links;
for a library in a folder of a project, into the project's repository) and register the
merge driver of the generated files; the host's ``pre-receive`` gate; ``clone``.

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
from librarian.formats.threeway import MERGED_FILES, ThreeWayConflict, merge_generated
from librarian.git import clone_repository, hooks_path, set_config, strip_credentials
from librarian.library import GeneratedFiles, Library, is_library, refuse_linked_paths

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


# -- the merge driver and the host's gate ---------------------------------------------------

DRIVER = "librarian"
ATTRIBUTES_HEADER = "# librarian: generated files merged by meaning (`librarian hooks install`)"


def driver_command(python: str | None = None) -> str:
    """The command git runs for a generated file (``%O %A %B %P``: base, ours and the
    result, theirs, the path)."""
    interpreter = shlex.quote(python or sys.executable)
    return f"{interpreter} -m librarian merge-driver %O %A %B %P"


def install_merge_driver(library: Library) -> list[str]:
    """Register the merge driver in the clone's own config and name the generated files in
    ``.git/info/attributes`` (local to the clone: nothing to commit); returns their paths."""
    with library.store() as store:
        set_config(store, {((b"merge", DRIVER.encode()), b"name"):
                           b"librarian: generated files merged by meaning",
                           ((b"merge", DRIVER.encode()), b"driver"): driver_command().encode()})
    attributes = library.git_dir / "info" / "attributes"
    attributes.parent.mkdir(exist_ok=True)
    refuse_linked_paths(library.root, [".git/info/attributes"])
    lines = attributes.read_text("utf-8").splitlines() if attributes.is_file() else []
    wanted = [f"/{path} merge={DRIVER}" for path in MERGED_FILES]
    missing = [line for line in wanted if line not in lines]
    if missing:
        header = [ATTRIBUTES_HEADER] if ATTRIBUTES_HEADER not in lines else []
        atomic_write(attributes, "\n".join([*lines, *header, *missing, ""]).encode(),
                     mode=0o644)
    return list(MERGED_FILES)


def install_hooks_and_driver(library: Library, *,
                             force: bool = False) -> tuple[HooksInstalled, list[str]]:
    """``hooks install``: the hooks, then the merge driver (the hooks' names, the paths of
    the files it merges)."""
    return install_hooks(library, force=force), install_merge_driver(library)


def install_server_hook(git_dir: Path, *, force: bool = False) -> list[str]:
    """The ``pre-receive`` gate in a bare repository (``hooks install --server``)."""
    if not (git_dir / "objects").is_dir() or not (git_dir / "refs").is_dir():
        raise UsageError(f"{git_dir} is not a bare git repository",
                         hint="run it in the host's repository (the directory holding "
                         "HEAD, objects/ and refs/), or pass --git-dir")
    source = hooks_dir() / "server" / "pre-receive"
    target = git_dir / "hooks" / "pre-receive"
    rendered = render_hook(source)
    if target.exists() and not force and target.read_bytes() != rendered:
        raise ConflictError(f"{target} exists and differs from librarian's hook",
                            hint="pass --force to replace it", path=str(target))
    target.parent.mkdir(exist_ok=True)
    atomic_write(target, rendered, mode=0o755)
    return ["pre-receive"]


def merge_file(base: Path, ours: Path, theirs: Path, path: str) -> str | None:
    """Git's merge driver: ``ours`` becomes the merge of the three by meaning; the problem
    when there is a conflict (then ``ours`` is left as it was and git reports it)."""
    def read(file: Path) -> bytes | None:
        return file.read_bytes() if file.is_file() else None

    try:
        merged = merge_generated(path, read(base), read(ours), read(theirs))
    except ThreeWayConflict as exc:
        return str(exc)
    if merged is not None:
        atomic_write(ours, merged, mode=0o644)
    return None


@dataclass(frozen=True, slots=True)
class CloneResult:
    url: str
    path: str
    installed: tuple[str, ...]  # the hooks
    merge_driver: tuple[str, ...]  # the generated files it merges


def clone_library(url: str, directory: Path | None,
                  generated: tuple[GeneratedFiles, ...]) -> CloneResult:
    """``git clone`` of a team library, then its hooks and merge driver, in one step."""
    shown = strip_credentials(url)
    if directory is None:
        name = shown.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
        directory = Path(name or "library")
    target = directory.absolute()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UsageError(f"{target} exists and is not an empty directory")
    clone_repository(url, target)
    if not is_library(target):
        raise UsageError(f"{shown} holds no library.yaml; cloned into {target} anyway",
                         hint="it is a git repository but not a librarian library")
    done, merged = install_hooks_and_driver(Library(target, generated))
    return CloneResult(shown, str(target), done.installed, tuple(merged))
