"""A status's look ahead (``WorkTreeCache.look_ahead``): half of the items worked out by a
forked child. It says exactly what a status item by item says, whatever changed in either
half; the child's outcomes are the ones used, and what it found is kept in the stat cache,
in the order of the pass."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import HashCounter, make_skill, settle_files, two_processors
from hypothesis import given
from hypothesis import strategies as st

from librarian.core import halves
from librarian.ops.retention import retain
from librarian.ops.status import library_status
from librarian.store import itemscan, statcache
from librarian.store.library import Library
from librarian.store.statfile import CacheFormatError, ItemsFile, identity_of

NAMES = [f"skill-{i}" for i in range(8)]  # the child works out the first four


@pytest.fixture
def settled(library: Path, sources: Path, monkeypatch: pytest.MonkeyPatch) -> Library:
    settle_files(monkeypatch)
    lib = Library(library)
    for name in NAMES:
        retain(lib, make_skill(sources, name, extra_files={"notes/a.md": f"{name}\n"}))
    assert library_status(lib).clean  # writes the stat cache
    return lib


def _states(lib: Library, monkeypatch: pytest.MonkeyPatch, *, split: bool) -> dict[str, str]:
    monkeypatch.setattr(halves, "LEAST", 1 if split else 10**9)
    return {i.path: i.status for i in library_status(lib).items}


def _append(item: Path) -> None:
    with (item / "notes" / "a.md").open("a") as out:
        out.write("more\n")


def _chmod(item: Path) -> None:
    (item / "notes" / "a.md").chmod(0o755)


def _link(item: Path) -> None:
    (item / "notes" / "a.md").unlink()
    (item / "notes" / "a.md").symlink_to(item / "SKILL.md")


MUTATIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "content edited": (_append, "modified"),
    "file added": (lambda item: (item / "notes" / "b.md").write_text("b\n"), "modified"),
    "file removed": (lambda item: (item / "notes" / "a.md").unlink(), "modified"),
    "made executable": (_chmod, "modified"),
    "a link in a file's place": (_link, "modified"),
    "a directory replaced by a link loop": (
        lambda item: (shutil.rmtree(item / "notes"), (item / "notes").symlink_to("notes")),
        "modified"),
    "an empty directory added": (lambda item: (item / "empty").mkdir(), "clean"),
    "item removed": (shutil.rmtree, "missing"),
}


@two_processors
@pytest.mark.parametrize("mutation", MUTATIONS)
def test_a_change_in_either_half_is_seen_as_item_by_item(
    settled: Library, monkeypatch: pytest.MonkeyPatch, mutation: str
) -> None:
    change, state = MUTATIONS[mutation]
    for name in (NAMES[1], NAMES[6]):  # one the child judges, one this process does
        change(settled.root / "skills" / name)
    split = _states(settled, monkeypatch, split=True)
    assert split == _states(settled, monkeypatch, split=False)
    assert split[f"skills/{NAMES[1]}"] == split[f"skills/{NAMES[6]}"] == state
    assert {path for path, s in split.items() if s != "clean"} <= {
        f"skills/{NAMES[1]}", f"skills/{NAMES[6]}"}


class Looked:
    """The item directories this process looked at (a child's looks stay in the child)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.quick: list[str] = []
        self.scanned: list[str] = []
        quick, scan = statcache.unchanged, statcache.full_scan

        def counted_quick(directory: str, *args: object) -> bool:
            self.quick.append(directory.rsplit("/", 1)[1])
            return quick(directory, *args)  # type: ignore[arg-type]

        def counted_scan(directory: str, *args: object) -> itemscan.Scan:
            self.scanned.append(directory.rsplit("/", 1)[1])
            return scan(directory, *args)  # type: ignore[arg-type]

        monkeypatch.setattr(statcache, "unchanged", counted_quick)
        monkeypatch.setattr(statcache, "full_scan", counted_scan)


@two_processors
def test_the_childs_outcomes_are_used(settled: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    looked = Looked(monkeypatch)
    assert set(_states(settled, monkeypatch, split=True).values()) == {"clean"}
    assert looked.quick == NAMES[4:], "the first half looked at by the child alone"
    looked.quick.clear()
    assert set(_states(settled, monkeypatch, split=False).values()) == {"clean"}
    assert looked.quick == NAMES, "all looked at here without the split"


@two_processors
def test_what_the_child_found_is_kept_in_order(settled: Library,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for name in NAMES:  # every item re-read: each gets a new record, half of them made by the child
        _append(settled.root / "skills" / name)
    assert set(_states(settled, monkeypatch, split=True).values()) == {"modified"}
    items = ItemsFile(settled.cache_dir / statcache.ITEMS_FILE, identity_of(settled.root / ".git"))
    assert [items.key(i) for i in range(items.count)] == [f"skills/{n}" for n in NAMES]
    looked = Looked(monkeypatch)
    hashed = HashCounter(monkeypatch)
    assert set(_states(settled, monkeypatch, split=False).values()) == {"modified"}
    assert looked.scanned == [] and hashed.calls == 0, "the child's records hold"


outcomes = st.one_of(st.none(), st.tuples(
    st.one_of(st.none(), st.tuples(
        st.binary(min_size=20, max_size=20).map(lambda b: b.hex().encode()),
        st.binary(min_size=32, max_size=32).map(lambda b: "sha256:" + b.hex()))),
    st.one_of(st.none(), st.integers(0, 2**32 - 1), st.binary(max_size=64))))


@given(st.lists(outcomes, max_size=8))
def test_outcomes_come_back_as_sent(sent: list[itemscan.Outcome]) -> None:
    data = b"".join(itemscan.encode_outcome(found) for found in sent)
    assert itemscan.decode_outcomes(data, len(sent)) == sent


@given(st.binary(max_size=200), st.integers(0, 6))
def test_any_bytes_decode_to_outcomes_or_a_format_error(data: bytes, count: int) -> None:
    try:
        found = itemscan.decode_outcomes(data, count)
    except CacheFormatError:
        return
    assert len(found) == count
