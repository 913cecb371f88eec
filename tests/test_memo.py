"""What is derived from a tree id is remembered across commands, and never changes what a
command shows (store/memo.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli, make_skill, write

from librarian.ops.retention import retain
from librarian.store.library import Library

Cap = pytest.CaptureFixture[str]


def test_inspect_and_status_show_the_same_with_and_without_the_memo(
    library: Path, sources: Path, capsys: Cap
) -> None:
    retain(Library(library), make_skill(sources, "pdf", description="Reads PDFs."))
    cache = library / ".git" / "librarian" / "cache"
    first = cli(capsys, library, "inspect", "--json", "--verbose")
    assert first.code == 0, first.err
    assert (cache / "inspect.json").is_file()  # kinds.bin: for drafts and managed items
    again = cli(capsys, library, "inspect", "--json", "--verbose")
    assert again.json == first.json
    (cache / "inspect.json").unlink()
    assert cli(capsys, library, "inspect", "--json", "--verbose").json == first.json


def test_a_damaged_memo_is_ignored(library: Path, sources: Path, capsys: Cap) -> None:
    retain(Library(library), make_skill(sources, "pdf"))
    fresh = cli(capsys, library, "inspect", "--json").json
    cache = library / ".git" / "librarian" / "cache"
    write(cache / "inspect.json", b"{not json")
    write(cache / "kinds.bin", b"LBSM not a memo")
    assert cli(capsys, library, "inspect", "--json").json == fresh
    assert cli(capsys, library, "status").code == 0
