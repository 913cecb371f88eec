"""The private dulwich attributes the library reads (librarian/git/dulwich_private.py) are
still there, of the kind it expects, in the installed dulwich: a release that renames or
reshapes one fails here, naming it, rather than somewhere deep in an update."""

from __future__ import annotations

import inspect
from pathlib import Path

import dulwich
import pytest
from dulwich.object_store import DiskObjectStore
from dulwich.objects import Blob
from dulwich.pack import Pack
from dulwich.repo import Repo

from librarian.git import dulwich_private
from librarian.git.dulwich_private import PRIVATE, open_packs, pack_basename, remove_pack


def _described(owner: type, name: str) -> str:
    return f"dulwich {dulwich.__version__}: {owner.__module__}.{owner.__qualname__}.{name}"


def _two_packs(tmp_path: Path) -> Repo:
    repo = Repo.init(str(tmp_path), mkdir=False)
    for text in (b"one\n", b"two\n"):
        repo.object_store.add_objects([(Blob.from_string(text), None)])
    return repo


@pytest.mark.parametrize(("owner", "name"), PRIVATE,
                         ids=[f"{owner.__name__}.{name}" for owner, name in PRIVATE])
def test_each_private_attribute_is_still_there(tmp_path: Path, owner: type,
                                               name: str) -> None:
    repo = _two_packs(tmp_path)
    with repo:
        instance = repo.object_store if owner is DiskObjectStore else repo.object_store.packs[0]
        assert isinstance(instance, owner)
        assert hasattr(instance, name), f"{_described(owner, name)} is gone"
        methods = {"_remove_pack": ("pack",)}
        if name in methods:
            parameters = tuple(inspect.signature(getattr(instance, name)).parameters)
            assert parameters == methods[name], (
                f"{_described(owner, name)} now takes {parameters}, not {methods[name]}")


def test_every_private_read_is_listed() -> None:
    """What the module reads is what it lists (a new use must be listed, so tested)."""
    source = inspect.getsource(dulwich_private).split('"""', 2)[2]
    read = {part.split("(")[0].split(")")[0].split()[0]
            for part in source.split(".")[1:] if part.startswith("_")}
    assert read == {name for _, name in PRIVATE}


def test_they_behave_as_the_library_uses_them(tmp_path: Path) -> None:
    repo = _two_packs(tmp_path)
    store = repo.object_store
    with repo:
        listed = store.packs
        packs = open_packs(store)
        assert isinstance(packs, dict), f"{_described(type(store), '_pack_cache')}: " \
            f"a {type(packs).__name__}, not a dict"
        assert len(packs) == 2 and all(isinstance(p, Pack) for p in packs.values()), (
            f"{_described(type(store), '_pack_cache')} no longer holds the open packs")
        assert sorted(id(p) for p in packs.values()) == sorted(id(p) for p in listed)
        first = next(iter(packs.values()))
        base = pack_basename(first)
        assert isinstance(base, str) and Path(base + ".pack").is_file() and \
            Path(base + ".idx").is_file(), f"{_described(Pack, '_basename')}: {base!r}"
        remove_pack(store, first)
        assert not Path(base + ".pack").exists() and not Path(base + ".idx").exists(), (
            f"{_described(type(store), '_remove_pack')} left the pack's files")
        assert all(p is not first for p in open_packs(store).values()), (
            f"{_described(type(store), '_remove_pack')} left the pack in _pack_cache")
        assert len(store.packs) == 1
