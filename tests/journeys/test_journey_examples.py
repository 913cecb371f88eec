"""The template's word-count fails on a missing file and the run
is recorded as failed; ``unhide`` is the documented name of ``show``."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import cli, make_skill

from librarian.core.resources import examples_dir

Capsys = pytest.CaptureFixture[str]


def test_word_count_fails_on_a_missing_file(library: Path, tmp_path: Path,
                                            capsys: Capsys) -> None:
    cli(capsys, library, "retain", str(examples_dir() / "recipes" / "word-count"))
    present = tmp_path / "notes.txt"
    present.write_text("two words\n")
    ok = cli(capsys, library, "run", "word-count", "-y", "--arg", f"file={present}")
    assert (ok.code, ok.out.split()) == (0, ["1", "2", "10"])
    missing = cli(capsys, library, "run", "word-count", "--arg", f"file={tmp_path / 'nope'}",
                  "--json")
    assert missing.code != 0
    assert missing.json["status"] == "failed"
    assert cli(capsys, library, "runs", "--json").json["runs"][0]["status"] == "failed"


def test_unhide_is_show(library: Path, sources: Path, capsys: Capsys) -> None:
    cli(capsys, library, "retain", str(make_skill(sources, "tips")))
    cli(capsys, library, "hide", "tips")
    result = cli(capsys, library, "unhide", "tips", "--json")
    assert result.code == 0 and result.json["hidden"] is False
    assert result.json["event"] == "show"  # the event vocabulary is the spec's
    cli(capsys, library, "hide", "tips")
    assert cli(capsys, library, "show", "tips").code == 0
