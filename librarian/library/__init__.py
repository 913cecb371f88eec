"""The library's domain over git: its layout and items (``layout``), the committed view of
one commit (``snapshot``: ``Snapshot``), finding an item by name (``resolve``), what a
committed manifest says (``summary``), the generated files a tree implies (``generated``)
and refusing a hostile or half-finished library (``guard``).

May import: ``librarian.cache``, ``librarian.git`` and the packages below them. Other
packages import the names below, not its modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from librarian.core.lazy import lazy_exports

if TYPE_CHECKING:
    from librarian.library.generated import GeneratedFiles as GeneratedFiles
    from librarian.library.guard import (
        refuse_committed_non_directory as refuse_committed_non_directory,
    )
    from librarian.library.guard import refuse_linked_paths as refuse_linked_paths
    from librarian.library.guard import refuse_linked_state as refuse_linked_state
    from librarian.library.guard import refuse_unsafe_library as refuse_unsafe_library
    from librarian.library.items import Item as Item
    from librarian.library.items import committed_items as committed_items
    from librarian.library.items import item_kind as item_kind
    from librarian.library.items import remember_kind as remember_kind
    from librarian.library.layout import PROJECT_FOLDER as PROJECT_FOLDER
    from librarian.library.layout import Library as Library
    from librarian.library.layout import enclosing_repo as enclosing_repo
    from librarian.library.layout import find_library as find_library
    from librarian.library.layout import is_library as is_library
    from librarian.library.layout import nearest_library as nearest_library
    from librarian.library.layout import open_library as open_library
    from librarian.library.lists import VisibilityLists as VisibilityLists
    from librarian.library.lists import skill_names as skill_names
    from librarian.library.snapshot import Snapshot as Snapshot
    from librarian.library.snapshot import committed_yaml as committed_yaml
    from librarian.library.snapshot import head_policy as head_policy
    from librarian.library.summary import summarize as summarize

__getattr__ = lazy_exports(__name__, {
    "GeneratedFiles": "generated",
    "Item": "items",
    "Library": "layout",
    "PROJECT_FOLDER": "layout",
    "Snapshot": "snapshot",
    "VisibilityLists": "lists",
    "committed_items": "items",
    "committed_yaml": "snapshot",
    "enclosing_repo": "layout",
    "find_library": "layout",
    "head_policy": "snapshot",
    "is_library": "layout",
    "item_kind": "items",
    "nearest_library": "layout",
    "open_library": "layout",
    "refuse_committed_non_directory": "guard",
    "refuse_linked_paths": "guard",
    "refuse_linked_state": "guard",
    "refuse_unsafe_library": "guard",
    "remember_kind": "items",
    "skill_names": "lists",
    "summarize": "summary",
})
