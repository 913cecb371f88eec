"""Derived caches under ``.git/librarian/cache``: the stat and digest caches of the work
tree (``statcache``, ``itemscan``), facts remembered by tree id (``memo``), and their one
binary framing (``statfile``). A cache is only ever slower when missing or damaged.

May import: ``librarian.git`` and the packages below it. Other packages import the names
below, not its modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from librarian.core.lazy import lazy_exports

if TYPE_CHECKING:
    from librarian.cache.memo import LastValueMemo as LastValueMemo
    from librarian.cache.memo import ShortMemo as ShortMemo
    from librarian.cache.memo import TreeMemo as TreeMemo
    from librarian.cache.statcache import DigestCache as DigestCache
    from librarian.cache.statcache import StagedDir as StagedDir
    from librarian.cache.statcache import WorkTreeCache as WorkTreeCache
    from librarian.cache.statcache import staged_dir as staged_dir

__getattr__ = lazy_exports(__name__, {
    "DigestCache": "statcache",
    "LastValueMemo": "memo",
    "ShortMemo": "memo",
    "StagedDir": "statcache",
    "TreeMemo": "memo",
    "WorkTreeCache": "statcache",
    "staged_dir": "statcache",
})
