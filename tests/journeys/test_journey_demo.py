"""The demo prints what the commands print. The same commands typed on
a library in the same state print the same text (ids and paths aside)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from support.helpers import cli

from librarian.cli.demo.tour import run_demo
from librarian.core.resources import examples_dir

Capsys = pytest.CaptureFixture[str]


def normal(text: str, *roots: Path) -> str:
    for root in roots:
        text = text.replace(str(root), "ROOT")
    text = re.sub(r"\b\d{8}T\d{6}-[0-9a-f]{8}\b", "RUN", text)
    text = re.sub(r"\b[0-9a-f]{12}\b", "COMMIT", text)
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?", "TIME", text)


def test_the_demo_shows_only_what_commands_print(tmp_path: Path, capsys: Capsys) -> None:
    steps = run_demo(tmp_path / "tour")
    transcript = "\n".join(s.output for s in steps)
    assert "run launched" not in transcript and "(succeeded, exit" not in transcript
    wait = next(s for s in steps if s.command.startswith("librarian wait "))
    run_id = wait.command.split()[-1]
    shown_before = "\n".join(s.output for s in steps[:steps.index(wait)])
    assert run_id in shown_before  # the id waited for was printed by `run --async`
    assert [s.exit_code for s in steps if s.command.startswith("librarian run")][0] == 5

    # The same commands on a library in the same state print the same.
    library = tmp_path / "replay"
    demo_root = tmp_path / "tour"
    assert cli(capsys, library.parent, "init", str(library), "--name", "demo-library").code == 0
    recipe = examples_dir() / "recipes" / "word-count"
    assert cli(capsys, library, "retain", str(recipe), "--evidence", "x").code == 0
    notes = demo_root / "notes.txt"
    for step in steps:
        words = shlex.split(step.command)
        if words[:2] not in (["librarian", "expose"], ["librarian", "approve"],
                             ["librarian", "run"], ["librarian", "withdraw"]):
            continue
        result = cli(capsys, library, *words[1:])
        assert result.code == step.exit_code, (step.command, result.err)
        printed = result.out + result.err
        assert normal(printed, library, demo_root / "library").rstrip("\n") == normal(
            step.output, library, demo_root / "library").rstrip("\n"), step.command
    assert notes.exists()
