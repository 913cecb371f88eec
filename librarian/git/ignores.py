"""Which work-tree paths git's ignore rules (``.gitignore``, ``.git/info/exclude``) leave
out, so ``status`` lists as untracked exactly what ``git status`` lists. Over dulwich, like
the rest of the store package; imports only ``git.repo``."""

from __future__ import annotations

from dulwich.ignore import IgnoreFilterManager

from librarian.git.repo import GitStore


class GitIgnores:
    """The ignore rules of one repository, read once."""

    def __init__(self, store: GitStore) -> None:
        self._manager = IgnoreFilterManager.from_repo(store.dulwich_repo)
        self._prefix = store.prefix + "/" if store.prefix else ""

    def ignored(self, path: str, *, directory: bool = False) -> bool:
        """Whether git ignores the library path ``path`` (below the store's ``prefix``;
        ``directory``: it is one)."""
        return bool(self._manager.is_ignored(self._prefix + path + ("/" if directory else "")))
