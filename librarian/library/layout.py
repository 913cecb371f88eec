"""Finding a library and the items its committed tree holds."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from librarian.errors import UsageError
from librarian.formats.config import (
    LIBRARY_FILE,
)
from librarian.git import GitStore
from librarian.library.generated import GeneratedFiles
from librarian.library.guard import READ_FOLDERS, refuse_linked_state

STATE_DIR = "librarian"  # inside .git/
#: Below STATE_DIR: the state of each library kept in a folder of a repository.
IN_FOLDER = "in"


@dataclass(frozen=True, slots=True)
class Library:
    """Paths of one library. Cheap to create; opens nothing. ``generated``: the makers of
    the files its commits generate (``library/generated.py``), handed over by whoever opens
    it; they are not part of its identity. ``repo``: the work tree of the repository it is
    committed in when that is not ``root`` itself (a project library: ``<project>/.agents``
    inside the project's repository); its commits then touch only ``prefix``."""

    root: Path
    generated: tuple[GeneratedFiles, ...] = field(default=(), compare=False, repr=False)
    repo: Path | None = None

    @property
    def repo_root(self) -> Path:
        """The work tree holding ``.git``: ``root`` for a library with its own repository."""
        return self.repo if self.repo is not None else self.root

    @property
    def prefix(self) -> str:
        """The library's folder inside its repository (posix), "" when it is the top."""
        return "" if self.repo is None else self.root.relative_to(self.repo).as_posix()

    @property
    def git_dir(self) -> Path:
        return self.repo_root / ".git"

    @property
    def state_dir(self) -> Path:
        """``.git/librarian``; a library in a folder has its own below it
        (``.git/librarian/in/<folder, quoted>``): lock, journal, stage and caches are per
        library, the repository's objects, refs and index are shared."""
        own = self.git_dir / STATE_DIR
        return own if self.repo is None else own / IN_FOLDER / quote(self.prefix, safe="")

    @property
    def lock_path(self) -> Path:
        return self.state_dir / "lock"

    @property
    def journal_path(self) -> Path:
        return self.state_dir / "journal.json"

    @property
    def conflicts_path(self) -> Path:
        """Items ``update --merge-conflicts`` left conflicted (``sources.conflicted``)."""
        return self.state_dir / "conflicts.json"

    @property
    def stage_dir(self) -> Path:
        return self.state_dir / "stage"

    @property
    def trash_dir(self) -> Path:
        return self.state_dir / "trash"

    @property
    def cache_dir(self) -> Path:
        return self.state_dir / "cache"

    @property
    def index_path(self) -> Path:
        return self.git_dir / "index"

    def path_of(self, library_path: str) -> Path:
        return self.root.joinpath(*library_path.split("/"))

    def repo_path(self, library_path: str) -> str:
        """``library_path`` as a path of the repository (what git's index and trees name)."""
        return f"{self.prefix}/{library_path}" if self.repo is not None else library_path

    def store(self) -> GitStore:
        return GitStore(self.repo_root, self.prefix)


#: The folder of a project's library in its repository, found from the project's top
#: (Codex reads ``<repo>/.agents/skills``; docs/agents.md).
PROJECT_FOLDER = ".agents"


def enclosing_repo(path: Path) -> Path | None:
    """The nearest parent of ``path`` holding a ``.git`` directory (git's discovery of the
    work tree, without ``GIT_DIR``); None when there is none, or when the nearest ``.git``
    is a file (a linked work tree or a submodule: not supported)."""
    for parent in path.parents:
        git = parent / ".git"
        if git.is_dir() and not git.is_symlink():
            return parent
        if git.exists() or git.is_symlink():
            return None
    return None


def open_library(path: Path, generated: tuple[GeneratedFiles, ...] = (),
                 repo: Path | None = None) -> Library | None:
    """The library whose folder is ``path``, or None: library.yaml (or a journal: a change
    killed between the two renames that swap library.yaml leaves none, and recovery must
    run) in a git work tree of its own, else in a folder of the enclosing repository
    (``repo``, when the caller found it already)."""
    git = path / ".git"
    if git.is_dir():
        library = Library(path, generated)
    elif git.exists() or git.is_symlink():
        return None
    else:
        top = repo if repo is not None and repo in path.parents else enclosing_repo(path)
        if top is None:
            return None
        library = Library(path, generated, top)
    if (path / LIBRARY_FILE).is_file() or library.journal_path.is_file():
        return library
    return None


def is_library(path: Path) -> bool:
    """Whether ``path`` is a library's folder (``open_library``)."""
    return open_library(path) is not None


def find_library(explicit: Path | None = None, cwd: Path | None = None,
                 generated: tuple[GeneratedFiles, ...] = ()) -> Library:
    """``--library``, else ``$LIBRARIAN_LIBRARY``, else the nearest parent holding
    library.yaml (spec §3.1) or a repository's top holding ``.agents/library.yaml``, else
    the default library of the user config file; opened with the makers of its
    ``generated`` files."""
    chosen = explicit or (Path(os.environ["LIBRARIAN_LIBRARY"]) if os.environ.get(
        "LIBRARIAN_LIBRARY") else None)
    if chosen is not None:
        root = chosen.expanduser().absolute()
        library = open_library(root, generated)
        if library is None:
            raise UsageError(
                f"{root} is not a library (no library.yaml in a git work tree)",
                hint="create one with `librarian init PATH`",
            )
        refuse_linked_state(library.git_dir, library.state_dir, folders=READ_FOLDERS)
        return library
    start = (cwd or Path.cwd()).absolute()
    found = nearest_library(start, generated)
    if found is not None:
        refuse_linked_state(found.git_dir, found.state_dir, folders=READ_FOLDERS)
        return found
    # Imported here: a command run in (or naming) its library never reads the user config.
    from librarian.formats.userconfig import config_path, load_user_config

    default = load_user_config().library
    if default is not None:
        root = default.absolute()
        library = open_library(root, generated)
        if library is None:
            raise UsageError(
                f"{root}, the default library in {config_path()}, is not a library",
                hint="fix 'library:' there, or create it with `librarian init PATH`")
        return library
    raise UsageError(
        f"{start} is not inside a library",
        hint="pass --library PATH, set LIBRARIAN_LIBRARY, put 'library: PATH' in "
        f"{config_path()}, or run `librarian init`",
    )


def nearest_library(start: Path, generated: tuple[GeneratedFiles, ...] = ()) -> Library | None:
    """The nearest parent of ``start`` (or itself) that is a library; at the top of a
    repository (a folder holding ``.git``), its ``.agents`` folder when that is one."""
    repo = enclosing_repo(start / "_")  # the nearest work tree holding ``start``
    for candidate in (start, *start.parents):
        if repo is not None and candidate == repo:
            library = open_library(candidate, generated)
            nested = None if library is not None else open_library(
                candidate / PROJECT_FOLDER, generated, candidate)
            if library is not None or nested is not None:
                return library or nested
            repo = enclosing_repo(candidate)
            continue
        library = open_library(candidate, generated, repo)
        if library is not None:
            return library
    return None


# -- items in a committed tree --------------------------------------------------------

