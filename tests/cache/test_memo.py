"""What is derived from a tree id is remembered across commands, and never changes what a
command shows (cache/memo.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers import cli, make_skill, write

from librarian.agents.claude_manifests import GENERATED
from librarian.library.layout import Library
from librarian.ops.retention import retain

Cap = pytest.CaptureFixture[str]


def test_inspect_and_status_show_the_same_with_and_without_the_memo(
    library: Path, sources: Path, capsys: Cap
) -> None:
    retain(Library(library, GENERATED), make_skill(sources, "pdf", description="Reads PDFs."))
    cache = library / ".git" / "librarian" / "cache"
    first = cli(capsys, library, "inspect", "--json", "--verbose")
    assert first.code == 0, first.err
    assert (cache / "inspect.json").is_file()  # kinds.bin: for drafts and managed items
    again = cli(capsys, library, "inspect", "--json", "--verbose")
    assert again.json == first.json
    (cache / "inspect.json").unlink()
    assert cli(capsys, library, "inspect", "--json", "--verbose").json == first.json


def test_a_damaged_memo_is_ignored(library: Path, sources: Path, capsys: Cap) -> None:
    retain(Library(library, GENERATED), make_skill(sources, "pdf"))
    fresh = cli(capsys, library, "inspect", "--json").json
    cache = library / ".git" / "librarian" / "cache"
    write(cache / "inspect.json", b"{not json")
    write(cache / "kinds.bin", b"LBSM not a memo")
    assert cli(capsys, library, "inspect", "--json").json == fresh
    assert cli(capsys, library, "status").code == 0


_IDS = st.binary(min_size=20, max_size=20) | st.integers(0, 40).map(lambda n: bytes([n]) * 20)


@settings(max_examples=150, deadline=None)
@given(before=st.dictionaries(_IDS, st.binary(min_size=8, max_size=8), max_size=60),
       new=st.dictionaries(_IDS, st.binary(min_size=8, max_size=8), max_size=12))
def test_a_sorted_file_with_records_merged_in_is_the_file_written_whole(
        before: dict[bytes, bytes], new: dict[bytes, bytes],
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """Runs of the old file are copied as pieces; the result is the file holding the old
    records with the new ones added or replacing, byte for byte, and reads back so."""
    from librarian.cache.statfile import SHORT_MEMO_MAGIC, SortedFile

    folder = tmp_path_factory.mktemp("sorted")
    merged, whole = folder / "merged.bin", folder / "whole.bin"
    SortedFile(merged, SHORT_MEMO_MAGIC, None, 8).write(merged, (1, 2), before)
    SortedFile(merged, SHORT_MEMO_MAGIC, (1, 2), 8).write(merged, (1, 2), new)
    SortedFile(whole, SHORT_MEMO_MAGIC, None, 8).write(whole, (1, 2), {**before, **new})
    assert merged.read_bytes() == whole.read_bytes()
    again = SortedFile(merged, SHORT_MEMO_MAGIC, (1, 2), 8)
    assert len(again) == len({**before, **new})
    assert all(again.get(key) == value for key, value in {**before, **new}.items())
