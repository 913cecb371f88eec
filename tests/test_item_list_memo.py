"""The committed item list is remembered by its top directory's tree id
(``store/library.py`` ``_remembered``) and never changes what a command shows."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli, write
from hypothesis import given
from hypothesis import strategies as st
from sources_helpers import Upstream, install

from librarian.store.library import (
    REMEMBERED_ITEMS,
    Item,
    Library,
    _decode_items,
    _encode_items,
    committed_items,
)
from librarian.store.memo import TreeMemo

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
    with Library(library).store() as store:
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


names = st.text(st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)),
                min_size=1, max_size=12)
trees = st.binary(min_size=20, max_size=20).map(lambda raw: raw.hex().encode())


@st.composite
def item_lists(draw: st.DrawFn) -> list[Item]:
    items = []
    for state, top in draw(st.lists(st.sampled_from(
            [("retained", "skills"), ("draft", "drafts"), ("managed", "sources")]))):
        name, kind = draw(names), draw(st.sampled_from(["skill", "recipe"]))
        if state == "managed":
            source, middle = draw(names), draw(st.lists(names, max_size=2))
            path = "/".join([top, source, *middle, name])
            items.append(Item(f"{source}:{name}", kind, state, path, draw(trees)))
        else:
            items.append(Item(name, kind, state, f"{top}/{name}", draw(trees)))
    return items


@given(item_lists())
def test_a_list_decodes_to_what_was_encoded(items: list[Item]) -> None:
    if items:
        assert _decode_items(_encode_items(items)) == items


@given(st.binary(max_size=200))
def test_any_bytes_decode_to_a_list_or_none(data: bytes) -> None:
    decoded = _decode_items(data)
    assert decoded is None or all(isinstance(item, Item) for item in decoded)
