"""Files a library generates from its committed tree, and the protocol of their makers.

Some committed files are derived from the rest of the tree (the Claude Code manifests list
the visible skills). Their maker is not the transaction's business: a layer above hands
each maker to the library it opens (``Library.generated``), as Mercurial's transaction
takes finalize callbacks. A transaction asks each maker whether its changes touch what the
maker reads (``watches``, ``keeps``) and, when they do, adds the maker's files to the same
commit; ``check`` asks each maker what is wrong with the files it finds.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Protocol

from librarian.git import GitStore, ObjectId


class GeneratedFiles(Protocol):
    """A maker of generated files (``agents.claude_manifests.ClaudeManifests``)."""

    #: The library paths of the files it writes.
    paths: tuple[str, ...]

    def watches(self, path: str) -> bool:
        """Whether a change at ``path`` can change the generated files."""
        ...

    def keeps(self, store: GitStore, old: ObjectId, new: ObjectId) -> bool:
        """Whether the tree ``old`` at a watched path may become ``new`` without changing
        the generated files (an update of an item's content), so no walk is needed."""
        ...

    def expected(self, store: GitStore, tree: ObjectId | None) -> dict[str, bytes]:
        """The generated files ``tree`` should hold, by library path."""
        ...

    def problems(self, found: Mapping[str, bytes | None], expected: Mapping[str, bytes] | None,
                 item_paths: Collection[str]) -> list[str]:
        """What ``check`` says of the files ``found`` (None: missing), against ``expected``
        (None: not compared), given the item directories that exist."""
        ...
