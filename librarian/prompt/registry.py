"""``prompt``: the registry an agent reads at every session start (spec §4).

The registry is built from the committed tree (HEAD): retained and managed skills that are
not hidden (name, description, location of SKILL.md), the bodies of resident skills,
recipes by name with environment and execution mode, and the tools ``tools.yaml`` exposes
with their contract. Drafts are never listed. Visibility comes from the committed
``library.yaml``, so the whole registry is a function of the HEAD tree id and the
library's location.

Two caches under ``.git/librarian/cache/`` keep it fast:

- ``prompt.json``: the last registry, keyed by HEAD tree id and library root. A hit reads
  one file and no git object beyond the HEAD commit.
- ``prompt-items.json``: item tree id (and directory name) -> parsed summary (name,
  description, recipe contract). Tree ids are immutable, so after a retention only the
  new item is parsed.

Values are in ``prompt.entries``, building in ``prompt.build``, the caches in
``prompt.cache``, rendering (formats, ``--budget``) in ``prompt.render``.
"""

from __future__ import annotations

import contextlib

from librarian.library import Library, Snapshot
from librarian.prompt.build import build_registry
from librarian.prompt.cache import REGISTRY_CACHE, read_json, write_json
from librarian.prompt.entries import Registry


def load_registry(library: Library, *, use_cache: bool = True) -> Registry:
    """The registry of the committed library (from the cache when HEAD's tree is known)."""
    with library.store() as store:
        head = store.head()
        tree = store.tree_of(head)
        key = f"{tree.decode() if tree else '-'} {library.root}"
        cache_path = library.cache_dir / REGISTRY_CACHE
        if use_cache:
            cached = read_json(cache_path)
            if cached.get("key") == key and isinstance(cached.get("registry"), dict):
                with contextlib.suppress(KeyError, TypeError):
                    return Registry.from_json(cached["registry"])
        registry = build_registry(Snapshot.at(library, store, head))
    write_json(library, cache_path, {"key": key, "registry": registry.to_json()})
    return registry
