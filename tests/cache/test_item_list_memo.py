"""The committed item list is remembered by its top directory's tree id
(``library/layout.py`` ``_remembered``) and never changes what a command shows."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.helpers import cli, write
from support.sources_helpers import Upstream, install

from librarian.agents.claude_manifests import GENERATED
from librarian.cache.memo import LastValueMemo, TreeMemo
from librarian.cache.statfile import identity_of, write_blob
from librarian.library import items as library_module
from librarian.library.items import (
    REMEMBERED_ITEMS,
    Item,
    _decode_items,
    _encode_items,
    _remembered,
    committed_items,
)
from librarian.library.layout import Library

Cap = pytest.CaptureFixture[str]
LIST = Path(".git/librarian/cache/list-sources.bin")


def _upstream(tmp_path: Path, count: int) -> Upstream:
    upstream = Upstream(tmp_path / "upstream")
    for number in range(count):
        upstream.skill(f"skills/s{number:03d}")
    upstream.recipe("tools/r0")
    upstream.commit("many")
    return upstream


def _listed(library: Path, *, save: bool = False) -> list[Item]:
    with Library(library, GENERATED).store() as store:
        items = list(committed_items(store, store.tree_of(store.head())))
        if save:
            TreeMemo.save_all(store)
    return items


def test_a_long_list_is_remembered_and_read_back_the_same(
        tmp_path: Path, library: Path, capsys: Cap) -> None:
    install(capsys, library, _upstream(tmp_path, REMEMBERED_ITEMS))
    (library / LIST).unlink(missing_ok=True)
    listed = _listed(library, save=True)  # listed from the trees, then remembered
    assert (library / LIST).is_file()
    assert len(listed) == REMEMBERED_ITEMS + 1
    assert {item.kind for item in listed} == {"skill", "recipe"}
    assert _listed(library) == listed  # read back from the memo
    status = cli(capsys, library, "status", "--json")
    assert status.code == 0 and len(status.json["items"]) == len(listed)


def test_a_short_list_is_not_remembered(tmp_path: Path, library: Path, capsys: Cap) -> None:
    install(capsys, library, _upstream(tmp_path, 3))
    assert cli(capsys, library, "status").code == 0
    assert not (library / LIST).exists()


def test_a_new_tree_replaces_the_remembered_list(
        tmp_path: Path, library: Path, capsys: Cap) -> None:
    upstream = _upstream(tmp_path, REMEMBERED_ITEMS)
    install(capsys, library, upstream)
    before = _listed(library, save=True)
    upstream.skill("skills/zz-new").remove("skills/s000").commit("one in, one out")
    assert cli(capsys, library, "update").code == 0
    after = _listed(library, save=True)
    names = {item.name for item in after}
    assert "team:zz-new" in names and "team:s000" not in names
    assert len(after) == len(before)
    assert _listed(library) == after


def test_a_damaged_or_forged_list_is_listed_again(
        tmp_path: Path, library: Path, capsys: Cap) -> None:
    install(capsys, library, _upstream(tmp_path, REMEMBERED_ITEMS))
    truth = _listed(library, save=True)
    data = (library / LIST).read_bytes()
    write(library / LIST, data[:-1] + bytes([data[-1] ^ 1]))  # the checksum fails
    assert _listed(library) == truth
    (library / LIST).unlink()
    outside = tmp_path / "outside.bin"
    write(outside, data)
    (library / LIST).symlink_to(outside)  # never followed, never written through
    assert _listed(library, save=True) == truth
    assert outside.read_bytes() == data
    assert not (library / LIST).is_symlink()  # the save replaced the link, not its target


def test_a_forged_list_with_a_valid_checksum_is_listed_again(
        tmp_path: Path, library: Path, capsys: Cap) -> None:
    install(capsys, library, _upstream(tmp_path, REMEMBERED_ITEMS))
    truth = _listed(library, save=True)
    with Library(library, GENERATED).store() as store:
        key = bytes.fromhex(store.lookup(store.tree_of(store.head()), "sources").sha.decode())
    identity = identity_of(library / ".git")
    assert identity is not None
    good = _encode_items(truth)
    for forged in (b"mszzzz" + good[6:],  # not a tree id
                   good.replace(b"sources/team/", b"sources/../../", 1),  # outside
                   good.replace(b"sources/team/", b"skills/team/", 1),  # another top
                   b"rs" + good[2:],  # a retained item under sources/
                   good + b"\0ms" + b"0" * 40 + b"sources/team/"):  # an empty name
        write_blob(library / LIST, identity, key, forged)
        assert _listed(library) == truth
    status = cli(capsys, library, "status")
    assert status.code == 0 and "../" not in status.out


def test_a_caller_that_stops_early_reads_no_further(
        tmp_path: Path, library: Path, capsys: Cap, monkeypatch: pytest.MonkeyPatch) -> None:
    install(capsys, library, _upstream(tmp_path, REMEMBERED_ITEMS))
    (library / LIST).unlink(missing_ok=True)
    looked_at: list[bytes] = []
    real = library_module.item_kind

    def counting(store: object, tree: bytes) -> object:
        looked_at.append(tree)
        return real(store, tree)  # type: ignore[arg-type]

    monkeypatch.setattr(library_module, "item_kind", counting)
    with Library(library, GENERATED).store() as store:
        listing = committed_items(store, store.tree_of(store.head()))
        first = next(listing)
        listing.close()  # as a lookup that found its item does
        TreeMemo.save_all(store)
    assert first.name == "team:s000"
    # the source's tree, skills/, then s000: no other item's tree was looked at
    assert len(looked_at) <= 3 < REMEMBERED_ITEMS
    assert not (library / LIST).exists(), "a part of a list is never remembered"


names = st.text(st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)),
                min_size=1, max_size=12).filter(lambda name: name not in (".", ".."))
trees = st.binary(min_size=20, max_size=20).map(lambda raw: raw.hex().encode())
TOPS = {"retained": "skills", "draft": "drafts", "managed": "sources"}


@st.composite
def item_lists(draw: st.DrawFn) -> tuple[str, list[Item]]:
    state = draw(st.sampled_from(sorted(TOPS)))
    top, items = TOPS[state], []
    for _ in range(draw(st.integers(1, 6))):
        name, kind = draw(names), draw(st.sampled_from(["skill", "recipe"]))
        if state == "managed":
            source, middle = draw(names), draw(st.lists(names, max_size=2))
            path = "/".join([top, source, *middle, name])
            items.append(Item(f"{source}:{name}", kind, state, path, draw(trees)))
        else:
            items.append(Item(name, kind, state, f"{top}/{name}", draw(trees)))
    return top, items


@given(item_lists())
def test_a_list_decodes_to_what_was_encoded(drawn: tuple[str, list[Item]]) -> None:
    top, items = drawn
    assert _decode_items(_encode_items(items), top) == items


@given(st.binary(max_size=200), st.sampled_from(sorted(TOPS.values())))
def test_any_bytes_decode_to_a_list_under_the_directory_or_none(data: bytes, top: str) -> None:
    decoded = _decode_items(data, top)
    assert decoded is None or all(
        item.path.startswith(top + "/") and ".." not in item.path.split("/")
        for item in decoded)


def test_a_list_that_would_not_decode_the_same_is_not_remembered(
        tmp_path: Path, library: Path, capsys: Cap) -> None:
    # a tree made by hand may hold a name with "/" (fsck refuses it in a fetch): the list
    # rebuilds names from paths, so such a list is listed each time instead
    install(capsys, library, _upstream(tmp_path, 2))
    with Library(library, GENERATED).store() as store:
        entry = store.lookup(store.tree_of(store.head()), "sources")
        assert entry is not None
        odd = [Item(f"team:s/{n}", "skill", "managed", f"sources/team/s/{n}", b"0" * 40)
               for n in range(REMEMBERED_ITEMS)]
        assert list(_remembered(store, entry, "sources", lambda: iter(odd))) == odd
        assert LastValueMemo.of(store, "list-sources").get(entry.sha.decode()) is None
        plain = [Item(f"team:{n}", "skill", "managed", f"sources/team/{n}", b"0" * 40)
                 for n in range(REMEMBERED_ITEMS)]
        assert list(_remembered(store, entry, "sources", lambda: iter(plain))) == plain
        assert LastValueMemo.of(store, "list-sources").get(entry.sha.decode()) is not None
