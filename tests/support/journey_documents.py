"""Every command's ``--json`` document, from one scenario on a real library: what
tests/journeys/test_journey_docs.py holds docs/commands.md to. Imported as
``support.journey_documents``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.helpers import cli, make_recipe, make_skill, run_main
from support.sources_helpers import Upstream


def collect(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> dict[str, dict[str, Any]]:
    """command path (``source add``) -> the JSON document it printed."""
    docs: dict[str, dict[str, Any]] = {}
    library = tmp_path / "lib"
    sources = tmp_path / "src"

    def run(command: str, *args: str, code: int = 0) -> dict[str, Any]:
        result = cli(capsys, library, *command.split(), *args, "--json")
        assert result.code == code, (command, result.code, result.out, result.err)
        docs.setdefault(command, result.json)
        return dict(result.json)

    result = run_main(capsys, "init", str(library), "--name", "docs", "--json")
    assert result.code == 0, result.err
    docs["init"] = result.json
    run("retain", str(make_skill(sources, "tips")))
    run("retain", str(make_recipe(sources, "count")))
    run("retain", str(make_skill(sources, "rough")), "--draft")
    run("review")
    run("defer", "rough", "--reason", "later")
    docs["defer --until"] = run("defer", "rough", "--reason", "later", "--until", "2099-01-02")
    run("promote", "rough")
    run("revise", "tips", str(make_skill(sources / "v2", "tips", body="# Two\n")))
    run("retire", "rough")
    run("restore", "rough")
    run("hide", "tips")
    run("unhide", "tips")
    run("hide", "tips")
    run("show", "tips")
    run("resident", "tips")
    run("prompt")
    run("inspect")
    docs["inspect NAME"] = run("inspect", "count")
    run("cat", "tips")
    run("status")
    run("diff")
    run("log")
    run("check")
    run("recover")
    run("hooks install")
    run("expose", "count")
    run("approve", "count", "--yes")
    target = sources / "words.txt"
    target.write_text("a b c\n")
    run("run", "count", "--arg", f"path={target}")
    launched = cli(capsys, library, "run", "count", "--async", "--arg", f"path={target}",
                   "--json")
    docs["run --async"] = launched.json
    run("wait", launched.json["run_id"])
    run("runs")
    docs["runs --prune"] = cli(capsys, library, "runs", "--prune", "--keep", "1",
                               "--json").json
    run("withdraw", "count")
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/pdf").commit()
    run("source add", "team", up.url)
    run("source list")
    run("outdated", code=10)
    run("update")
    run("verify")  # an unsigned source: nothing verified
    run("source remove", "team")
    run("discard", "rough", "--reason", "x", code=3)  # an error: rough is retained
    docs["error"] = docs.pop("discard")
    retained = make_skill(sources / "d", "draft-two")
    run("retain", str(retained), "--draft")
    docs["retain --draft"] = docs["retain"]
    docs["retain A B"] = run("retain", str(make_skill(sources / "m", "many-one")),
                             str(make_skill(sources / "m", "many-two")))
    run("discard", "draft-two", "--reason", "no")
    run("key generate", str(tmp_path / "key"))
    run("key public", str(tmp_path / "key"))
    run("release", "--key", str(tmp_path / "key"))  # the library publishes itself
    run("export codex-config")
    docs["demo"] = run_main(capsys, "demo", str(tmp_path / "tour"), "--json").json
    return docs
