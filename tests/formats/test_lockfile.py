"""librarian.lock (spec §2.13): one fixed shape, one item a line, read without a YAML parse.

The fixed-shape reader and ``yaml.safe_load`` must agree on everything the writer makes
and on anything else the fast reader accepts; any other text goes to the safe YAML loader.
"""

from __future__ import annotations

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from librarian.core.gitpaths import first_path_problem
from librarian.errors import UsageError
from librarian.formats import lockfile
from librarian.formats.lockfile import LockedSource, dump_lock, load_lock

HEX = "0123456789abcdef"
strings = st.text(min_size=1, max_size=30)  # url and ref: anything, hostile text included
names = st.from_regex(r"[a-z0-9]([a-z0-9]|-(?=[a-z0-9])){0,20}", fullmatch=True)
# The words YAML 1.1 reads as booleans or null must come back as strings too.
names = names | st.sampled_from(["yes", "no", "on", "off", "null", "true", "y", "n"])
# a path git's rules refuse (``aux``, reserved on Windows) is refused in a lock: not drawn
paths = st.builds(lambda kind, name: f"{kind}/{name}", st.sampled_from(["skills", "recipes",
                                                                         "on", "null"]),
                  names).filter(lambda path: first_path_problem([path]) is None)
digests = st.text(HEX, min_size=64, max_size=64).filter(lambda h: set(h) != {"0"}).map(
    lambda h: "sha256:" + h)
commits = st.text(HEX, min_size=40, max_size=40) | st.text(HEX, min_size=64, max_size=64)
sources = st.dictionaries(
    names,
    st.builds(
        LockedSource,
        url=strings,
        ref=strings,
        commit=commits,
        items=st.dictionaries(paths, digests, max_size=6),
        release=st.none() | st.integers(0, 10**12),
        release_tag=st.none() | st.text(HEX, min_size=40, max_size=40) | strings,
    ),
    max_size=3,
)


def _document(locked: dict[str, LockedSource]) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, entry in locked.items():
        spec: dict[str, object] = {"url": entry.url, "ref": entry.ref, "commit": entry.commit,
                                   "items": dict(entry.items)}
        if entry.release is not None:
            spec["release"] = entry.release
        if entry.release_tag is not None:
            spec["release-tag"] = entry.release_tag
        out[name] = spec
    return {"librarian-lock": 1, "sources": out}


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(sources)
def test_what_is_written_reads_back_the_same_on_the_fast_path_and_as_yaml(
    locked: dict[str, LockedSource],
) -> None:
    data = dump_lock(locked)
    assert lockfile._read_fixed_shape(data.decode(), "lock") == locked  # no YAML parse
    assert load_lock(data) == locked
    assert yaml.safe_load(data) == _document(locked)
    # Deterministic: the same lock in another order is the same bytes.
    assert dump_lock(dict(reversed(list(locked.items())))) == data


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(sources, st.data())
def test_a_damaged_lock_is_refused_or_read_as_yaml_reads_it(
    locked: dict[str, LockedSource], data: st.DataObject
) -> None:
    text = dump_lock(locked).decode()
    at = data.draw(st.integers(0, len(text)))
    cut = data.draw(st.integers(0, 3))
    insert = data.draw(st.text(alphabet=' :"\\{}#&*!|>-\n\tax0', max_size=3))
    damaged = (text[:at] + insert + text[at + cut:]).encode()
    try:
        ours = lockfile._read_fixed_shape(damaged.decode(), "lock")
    except lockfile._OtherShape:
        return  # read by the project's safe YAML loader, like any other manifest
    except UsageError:
        return
    try:
        theirs = yaml.safe_load(damaged)
    except yaml.YAMLError:
        pytest.fail(f"the fast reader accepted a lock YAML cannot read: {damaged!r}")
    assert lockfile._from_document(theirs, "lock") == ours
    assert load_lock(damaged) == ours


def test_a_lock_written_by_the_yaml_dumper_before_this_format_still_reads() -> None:
    entry = {"url": "https://git.example.org/team/library.git", "ref": "main",
             "commit": "a" * 40, "items": {"skills/pdf": "sha256:" + "b" * 64}}
    legacy = yaml.safe_dump({"librarian-lock": 1, "sources": {"team": entry}}, sort_keys=True)
    expected = {"team": LockedSource(entry["url"], "main", "a" * 40,  # type: ignore[arg-type]
                                     {"skills/pdf": "sha256:" + "b" * 64})}
    assert load_lock(legacy.encode()) == expected
    assert dump_lock(expected).decode() == legacy  # the shape did not change for plain values
    hand_edited = legacy.replace("ref: main", "ref: 'main'  # the default")
    assert load_lock(hand_edited.encode()) == expected


def test_the_release_fields_of_a_signed_source_round_trip() -> None:
    signed = {"team": LockedSource("u", "main", "c" * 40, {"skills/a": "sha256:" + "1" * 64},
                                   release=7, release_tag="d" * 40)}
    data = dump_lock(signed)
    assert b"    release: 7\n    release-tag: " + b"d" * 40 in data
    assert load_lock(data) == signed


def test_fifty_thousand_items_have_no_size_cliff() -> None:
    items = {f"skills/skill-{n:05d}": "sha256:" + f"{n + 1:064x}" for n in range(50_000)}
    locked = {"big": LockedSource("https://example.org/big.git", "main", "e" * 40, items)}
    data = dump_lock(locked)
    assert len(data) > 4 * 1024 * 1024
    assert data.count(b"\n") == 50_000 + 7  # one item a line
    assert lockfile._read_fixed_shape(data.decode(), "lock") == locked
    assert load_lock(data) == locked


@pytest.mark.parametrize("text, problem", [
    ("librarian-lock: 1\nsources:\n  a:\n    items:\n      x: s\n      x: t\n", "twice"),
    ("librarian-lock: 1\nsources:\n  a:\n    items:\n      ../x: sha256:" + "1" * 64 + "\n",
     "not an item path"),
    ("librarian-lock: 1\nsources:\n  a:\n    items:\n      skills/CON.md: sha256:" + "1" * 64
     + "\n", "not an item path"),
    ("librarian-lock: 1\nsources:\n  a:\n    items:\n      \"skills/a\\nb\": sha256:"
     + "1" * 64 + "\n", "not an item path"),
    ("librarian-lock: 1\nsources:\n  a:\n    items:\n      skills/a: sha256:" + "1" * 64
     + "\n      skills/b: sha256:" + "0" * 64 + "\n", "all zeros"),
    ("librarian-lock: 1\nsources:\n  a:\n    items:\n      skills/a: \"sha256:" + "1" * 64
     + "\\nsha256:" + "2" * 64 + "\"\n", "not a digest"),
    ("librarian-lock: 1\nsources:\n  a:\n    items:\n      skills/a: sha256:" + "1" * 64
     + "\n      skills/a: sha256:" + "2" * 64 + "\n", "twice"),
    ("librarian-lock: 1\nsources:\n  a:\n    items:\n      on: sha256:" + "1" * 64 + "\n",
     "mapping"),  # YAML reads the key as true
    ("librarian-lock: 1\nsources:\n  a:\n    commit: HEAD\n", "not a commit id"),
    ("librarian-lock: 1\nsources:\n  a:\n    ref: m\n    ref: n\n", "twice"),
    ("librarian-lock: 1\nsources:\n  a:\n    ref: m\n  a:\n    ref: n\n", "twice"),
    ("librarian-lock: 1\nsources:\n  a:\n    colour: red\n", "unknown key"),
    ("librarian-lock: 2\nsources: {}\n", "format version"),
    ("librarian-lock: 1\nsources:\n  a:\n    release: seven\n", "integer"),
    ("librarian-lock: 1\nsources:\n  a:\n    items: [x]\n", "mapping"),
    ("librarian-lock: 1\nsources:\n  a: &x\n    ref: *x\n", "strings"),
    ("librarian-lock: 1\nsources:\n  a:\n    commit: 1234\n", "strings"),
    ("librarian-lock: 1\nsources: !!python/object:os.system {}\n", "YAML"),
])
def test_hostile_or_malformed_locks_are_refused(text: str, problem: str) -> None:
    with pytest.raises(UsageError, match=problem):
        load_lock(text.encode())


_ITEM_TEXT = st.one_of(
    st.sampled_from(["skills/pdf", "a:", "a:b", "yes", "Null", "1e5", "abc", "e5", "0abc",
                     "skills/my skill", "_x", "/x", "x#y", "é", "sha256:" + "a" * 64]),
    st.text(min_size=1, max_size=12))


@settings(max_examples=200, deadline=None)
@example([("a/b", "sha256:" + "1" * 64 + "\nsha256:" + "2" * 64)], 0)  # two lines in one
@given(st.lists(st.tuples(_ITEM_TEXT, digests | _ITEM_TEXT), max_size=8), st.integers(0, 600))
def test_item_lines_judged_in_bulk_are_the_lines_judged_one_at_a_time(
        odd: list[tuple[str, str]], plain_count: int) -> None:
    """However many plain items surround the odd ones (one chunk or several), the lines
    are those each scalar written on its own gives."""
    plain = [(f"skills/s{n}", "sha256:" + f"{n:064x}") for n in range(plain_count)]
    items = sorted(plain + odd)
    one_at_a_time = "\n".join(f"      {lockfile._scalar(path)}: {lockfile._scalar(digest)}"
                              for path, digest in items).encode()
    assert lockfile._item_lines(items) == one_at_a_time


def test_a_run_of_item_lines_with_an_odd_line_reads_as_yaml_reads_it() -> None:
    """A run is matched whole when every line is a plain path and a digest; one line in
    another shape (a quoted path, a quoted digest) and the run is read line by line,
    to the same items."""
    plain = [f"      skills/s{n}: sha256:{n + 1:064x}" for n in range(300)]
    for odd in ('      "skills/my\\x20skill": sha256:' + "f" * 64,
                '      skills/quoted: "sha256:' + "e" * 64 + '"'):
        lines = [*plain[:150], odd, *plain[150:]]
        text = "librarian-lock: 1\nsources:\n  a:\n    items:\n" + "\n".join(lines) + \
            "\n    ref: main\n"
        expected = lockfile._from_document(yaml.safe_load(text), "lock")
        assert load_lock(text.encode()) == expected
        assert len(expected["a"].items) == 301
