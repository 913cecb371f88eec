"""``hooks install``: copy the project's git hooks into the library (copies, never links),
register the merge driver of the generated files; the host's ``pre-receive`` gate; ``clone``.

A hook is written with the interpreter of the librarian installing it in place of
``@LIBRARIAN_PYTHON@``, so it runs that librarian whatever ``PATH`` the commit has."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from librarian.core.fsutil import atomic_write
from librarian.core.resources import hooks_dir
from librarian.core.values import frozen
from librarian.errors import ConflictError, UsageError
from librarian.formats.threeway import MERGED_FILES, ThreeWayConflict, merge_generated
from librarian.git import clone_repository, set_config, strip_credentials
from librarian.library import GeneratedFiles, Library, is_library, refuse_linked_paths


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
                             force: bool = False) -> tuple[list[str], list[str]]:
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


@frozen
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
    installed, merged = install_hooks_and_driver(Library(target, generated))
    return CloneResult(shown, str(target), tuple(installed), tuple(merged))
