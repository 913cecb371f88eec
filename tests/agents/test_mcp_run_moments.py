"""The MCP server's ``run_result`` carries its moments as every JSON document does:
``started``/``ended`` in whole Unix seconds with ``started_at``/``ended_at`` beside them."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import cli_ok, make_recipe

from librarian.agents.claude_manifests import GENERATED
from librarian.agents.tools import call_tool
from librarian.library.layout import Library


def test_run_result_has_started_at_and_ended_at(
    capsys: pytest.CaptureFixture[str], library: Path, sources: Path, tmp_path: Path
) -> None:
    cli_ok(capsys, library, "retain", str(make_recipe(sources, "count")))
    cli_ok(capsys, library, "expose", "count")
    cli_ok(capsys, library, "approve", "count", "--yes")
    words = tmp_path / "words.txt"
    words.write_text("a b c\n")
    outcome = call_tool(Library(library, GENERATED), "count", {"path": str(words)}, tmp_path)
    document = outcome.document
    assert document["kind"] == "run_result" and not outcome.failed, outcome.text
    for field in ("started", "ended"):
        assert isinstance(document[field], int)
        assert document[f"{field}_at"].endswith("Z")
