"""Every use of dulwich's private attributes, in one place.

dulwich has no public way to do these three things, each of which the library needs:

- read the packs a ``DiskObjectStore`` has open without listing the pack directory again
  (``git.packs`` lists it on every call): ``_pack_cache``, a dict of pack name to
  ``Pack`` in the order dulwich searches them;
- name a pack's files (its ``.keep``, ``.pack`` and ``.idx``): ``Pack._basename``;
- drop a pack from a store and delete its files once its objects are in another:
  ``DiskObjectStore._remove_pack``.

Everything else goes through dulwich's public API. ``PRIVATE`` lists what this module
reads; tests/test_dulwich_private.py checks each against the installed dulwich and fails
naming the attribute when a release changes it. pyproject pins dulwich to the releases
tested.
"""

from __future__ import annotations

from dulwich.object_store import DiskObjectStore
from dulwich.pack import Pack

#: (class, attribute) of every private attribute read here.
PRIVATE = (
    (DiskObjectStore, "_pack_cache"),
    (DiskObjectStore, "_remove_pack"),
    (Pack, "_basename"),
)


def open_packs(store: DiskObjectStore) -> dict[str, Pack]:
    """The packs ``store`` has open, by name, in dulwich's search order: the store's own
    dict (reordering it reorders dulwich's search), no directory listed."""
    return store._pack_cache


def pack_basename(pack: Pack) -> str:
    """The path of ``pack``'s files without their suffix (``.pack``, ``.idx``, ``.keep``)."""
    return str(pack._basename)


def remove_pack(store: DiskObjectStore, pack: Pack) -> None:
    """Close ``pack``, forget it in ``store`` and delete its ``.pack`` and ``.idx``."""
    store._remove_pack(pack)
