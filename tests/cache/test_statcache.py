"""The binary stat caches (cache/statfile.py, cache/statcache.py): round trips, and a cache
that is damaged, from another library or a symlink is never trusted into a wrong answer."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.helpers import HashCounter, cli, make_skill, settle_files

from librarian.agents.claude_manifests import GENERATED
from librarian.cache import statcache
from librarian.cache.statfile import (
    DigestsFile,
    Entry,
    ItemsFile,
    decode_entry,
    encode_entry,
    identity_of,
    write_items,
)
from librarian.library.layout import Library
from librarian.ops.create import init_library
from librarian.ops.retention import retain
from librarian.ops.status import library_status

IDENTITY = (2049, 1234567)

names = st.one_of(
    st.text(max_size=24),
    # undecodable bytes, as os.scandir hands them back (surrogate escapes)
    st.binary(max_size=24).map(lambda b: b.decode("utf-8", "surrogateescape")),
)
raw_names = st.binary(max_size=24).filter(lambda b: b"\0" not in b)
ids = st.one_of(st.none(), st.tuples(
    st.binary(min_size=20, max_size=20).map(lambda b: b.hex().encode()),
    st.binary(min_size=32, max_size=32).map(lambda b: "sha256:" + b.hex())))
times = st.integers(min_value=-(2**63), max_value=2**63 - 1)
entries = st.builds(
    Entry,
    ids=ids,
    signature=st.binary(min_size=16, max_size=16),
    dirs=st.lists(st.tuples(raw_names, times, times), max_size=4).map(tuple),
    files=st.lists(raw_names, max_size=6).map(lambda f: tuple(sorted(f))),
)


@settings(deadline=None)  # a shared, loaded machine
@given(key=names, entry=entries)
def test_entry_round_trip(key: str, entry: Entry) -> None:
    record = encode_entry(key, entry)
    assert decode_entry(record) == (key, entry)
    assert decode_entry(b"x" + record + b"y", 1, len(record) + 1) == (key, entry)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.dictionaries(names, entries, max_size=5), cut=st.integers(min_value=0),
       flip=st.integers(min_value=0))
def test_items_file_round_trip_and_damage(
    tmp_path: Path, items: dict[str, Entry], cut: int, flip: int
) -> None:
    path = tmp_path / "items.bin"
    write_items(path, IDENTITY, (encode_entry(k, e) for k, e in items.items()))
    read = ItemsFile(path, IDENTITY)
    assert {read.key(i): read.decode(i)[1] for i in range(read.count)} == items
    assert ItemsFile(path, (IDENTITY[0], IDENTITY[1] + 1)).count == 0, "another library's"
    data = path.read_bytes()
    path.write_bytes(data[:cut % len(data)])
    assert ItemsFile(path, IDENTITY).count == 0, "truncated"
    damaged = bytearray(data)
    damaged[flip % len(data)] ^= 0x01
    path.write_bytes(bytes(damaged))
    assert ItemsFile(path, IDENTITY).count == 0, "a flipped bit"


keys = st.binary(min_size=20, max_size=20)
values = st.binary(min_size=32, max_size=32)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=st.dictionaries(keys, values, max_size=8), new=st.dictionaries(keys, values,
                                                                         max_size=8))
def test_digests_file_merge(tmp_path: Path, old: dict[bytes, bytes],
                            new: dict[bytes, bytes]) -> None:
    path = tmp_path / "digests.bin"
    path.unlink(missing_ok=True)  # tmp_path is shared by the examples
    DigestsFile(path, IDENTITY).write(path, IDENTITY, old)
    DigestsFile(path, IDENTITY).write(path, IDENTITY, new)
    read = DigestsFile(path, IDENTITY)
    expected = {**old, **new}
    assert len(read) == len(expected)
    for key, value in expected.items():
        assert read.digest(key) == "sha256:" + value.hex()
    assert read.digest(b"\xff" * 20) is None or b"\xff" * 20 in expected
    assert DigestsFile(path, (0, 0)).digest(next(iter(expected), b"")) is None


# -- the caches in a library -----------------------------------------------------------


def _stock(library: Path, sources: Path) -> Library:
    lib = Library(library, GENERATED)
    retain(lib, make_skill(sources, "alpha", extra_files={"notes/a.md": "aaaa\n"}))
    retain(lib, make_skill(sources, "beta"))
    return lib


@pytest.fixture
def settled(library: Path, sources: Path, monkeypatch: pytest.MonkeyPatch) -> Library:
    settle_files(monkeypatch)
    lib = _stock(library, sources)
    assert library_status(lib).clean  # writes the caches
    return lib


def _states(lib: Library) -> dict[str, str]:
    return {i.path: i.status for i in library_status(lib).items}


def test_truncated_cache_is_rebuilt(settled: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    path = settled.cache_dir / statcache.ITEMS_FILE
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    counter = HashCounter(monkeypatch)
    assert _states(settled) == {"skills/alpha": "clean", "skills/beta": "clean"}
    assert counter.calls == 2, "nothing is trusted from a truncated cache"
    assert ItemsFile(path, identity_of(settled.git_dir)).count == 2, "and it is written anew"
    assert _states(settled) == {"skills/alpha": "clean", "skills/beta": "clean"}
    assert counter.calls == 2


def test_cache_of_another_library_is_not_read(
    settled: Library, tmp_path: Path, sources: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    init_library(tmp_path / "other", "other-lib", GENERATED)
    other = _stock(tmp_path / "other", sources)
    library_status(other)
    # The other library's alpha is edited, then handed this library's cache, whose entries
    # name the same paths: trusting it could only be by accident, so none is trusted.
    (other.root / "skills" / "alpha" / "SKILL.md").write_bytes(b"edited\n")
    for name in (statcache.ITEMS_FILE, statcache.DIGESTS_FILE):
        shutil.copyfile(settled.cache_dir / name, other.cache_dir / name)
    counter = HashCounter(monkeypatch)
    assert _states(other) == {"skills/alpha": "modified", "skills/beta": "clean"}
    assert counter.calls == 2


def test_symlinked_cache_is_never_followed(
    settled: Library, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = settled.cache_dir / statcache.ITEMS_FILE
    outside = tmp_path / "elsewhere.bin"
    shutil.copyfile(path, outside)  # a valid cache for this very library
    before = outside.read_bytes()
    path.unlink()
    path.symlink_to(outside)
    (settled.root / "skills" / "alpha" / "SKILL.md").write_bytes(b"edited\n")
    counter = HashCounter(monkeypatch)
    assert _states(settled) == {"skills/alpha": "modified", "skills/beta": "clean"}
    assert counter.calls == 2, "the linked cache was not read"
    assert outside.read_bytes() == before, "nor written through"
    assert not path.is_symlink() and path.is_file(), "the link was replaced by a new file"


def test_linked_cache_directory_is_not_written_through(
    library: Path, sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settle_files(monkeypatch)
    lib = _stock(library, sources)
    shutil.rmtree(lib.cache_dir, ignore_errors=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    lib.cache_dir.symlink_to(elsewhere, target_is_directory=True)
    cache = statcache.WorkTreeCache(lib.cache_dir)
    cache.item_hash("skills/beta", str(lib.root / "skills" / "beta"))
    cache.save()
    assert list(elsewhere.iterdir()) == []


def test_json_caches_of_older_versions_are_dropped(settled: Library) -> None:
    for name in ("items.json", "digests.json"):
        (settled.cache_dir / name).write_text('{"version": 3, "entries": {}}')
    (settled.root / "skills" / "alpha" / "SKILL.md").write_bytes(b"edited\n")
    assert _states(settled)["skills/alpha"] == "modified"
    assert not (settled.cache_dir / "items.json").exists()


def test_items_are_found_in_any_order(settled: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    """Records are read in the order of the last pass; another order still finds each."""
    counter = HashCounter(monkeypatch)
    cache = statcache.WorkTreeCache(settled.cache_dir)
    for path in ("skills/beta", "skills/alpha", "skills/beta"):
        assert cache.item_hash(path, str(settled.root / path)) is not None
    assert counter.calls == 0
    cache.save(partial=True)
    assert ItemsFile(settled.cache_dir / statcache.ITEMS_FILE,
                     identity_of(settled.git_dir)).count == 2


def test_kinds_memo_is_binary_and_a_damaged_one_is_ignored(settled: Library) -> None:
    from librarian.cache.memo import ShortMemo

    path = settled.cache_dir / "kinds.bin"
    with settled.store() as store:
        memo = ShortMemo.of(store, "kinds")
        memo.put("ab" * 20, "recipe")
        memo.put("cd" * 20, "")
        memo.put("not hex", "skill")  # not a tree id: not remembered
        memo.put("ef" * 20, "far too long a word")  # not a word: not remembered
        memo.save()
    with settled.store() as store:
        memo = ShortMemo.of(store, "kinds")
        assert (memo.get("ab" * 20), memo.get("cd" * 20)) == ("recipe", "")
        assert memo.get("ef" * 20) is None and memo.get("not hex") is None
    path.write_bytes(path.read_bytes()[:-1])
    with settled.store() as store:
        assert ShortMemo.of(store, "kinds").get("ab" * 20) is None
    assert _states(settled) == {"skills/alpha": "clean", "skills/beta": "clean"}


def test_a_name_holding_nul_is_refused_by_the_encoder() -> None:
    with pytest.raises(ValueError):
        encode_entry("k", Entry(None, bytes(16), (), (b"a\0b",)))


@pytest.mark.parametrize("link", ["loop", "directory"])
def test_a_directory_replaced_by_a_link_is_modified(settled: Library, link: str) -> None:
    # alpha's record lists notes/; a link in its place is looked at, never followed (a
    # loop used to crash the quick look, which stats every listed directory first)
    notes = settled.root / "skills" / "alpha" / "notes"
    shutil.rmtree(notes)
    if link == "loop":
        notes.symlink_to("notes")
    else:
        notes.symlink_to(settled.root / "skills" / "beta")
    assert _states(settled) == {"skills/alpha": "modified", "skills/beta": "clean"}


def test_a_fifo_in_place_of_a_cache_is_not_waited_on(
    settled: Library, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # opened without O_NONBLOCK, a FIFO blocks until a writer comes: a command would hang
    assert cli(capsys, settled.root, "prompt").code == 0  # its caches exist, to be replaced
    for name in (statcache.ITEMS_FILE, statcache.DIGESTS_FILE, "kinds.bin", "inspect.json",
                 "prompt.json", "prompt-items.json"):
        path = settled.cache_dir / name
        path.unlink(missing_ok=True)
        os.mkfifo(path)
    counter = HashCounter(monkeypatch)
    assert _states(settled) == {"skills/alpha": "clean", "skills/beta": "clean"}
    assert counter.calls == 2, "nothing read from a FIFO"
    assert cli(capsys, settled.root, "inspect", "--json").code == 0
    assert cli(capsys, settled.root, "prompt").code == 0
