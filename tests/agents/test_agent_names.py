"""What agents are shown: never a hidden skill's name (an operator's view says them under
its own field), and names they can tell apart (``check`` reports a bare name two visible
skills share; the Claude Code plugin route loads each bare name once)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.helpers import cli, cli_ok, make_skill
from support.sources_helpers import Upstream, install

Cap = pytest.CaptureFixture[str]


def test_no_agent_facing_listing_names_a_hidden_skill(
    library: Path, sources: Path, capsys: Cap
) -> None:
    cli_ok(capsys, library, "retain", str(make_skill(sources, "shown")))
    cli_ok(capsys, library, "retain", str(make_skill(sources, "very-secret-name")))
    cli_ok(capsys, library, "hide", "very-secret-name")
    for fmt in ("xml", "markdown", "json"):
        out = cli_ok(capsys, library, "prompt", "--format", fmt).out
        assert "very-secret-name" not in out and "shown" in out, fmt
    operator = json.loads(cli_ok(capsys, library, "prompt", "--format", "json",
                                 "--operator").out)
    assert operator["operator"] == {"hidden": ["very-secret-name"]}
    assert "very-secret-name" not in json.dumps(operator["skills"])
    refused = cli(capsys, library, "prompt", "--operator")
    assert refused.code == 2 and "--format json" in refused.err


def test_two_visible_skills_with_one_name_are_reported_and_told_apart(
    library: Path, sources: Path, capsys: Cap, tmp_path: Path
) -> None:
    cli_ok(capsys, library, "retain", str(make_skill(sources, "pdf")))
    upstream = Upstream(tmp_path / "up").skill("skills/pdf").skill("skills/docx")
    upstream.commit()
    install(capsys, library, upstream, source="anth")
    prompt = json.loads(cli_ok(capsys, library, "prompt", "--format", "json").out)
    assert [s["name"] for s in prompt["skills"]] == ["pdf", "anth:docx", "anth:pdf"]
    report = json.loads(cli_ok(capsys, library, "check", "--json").out)
    told = [w for w in report["warnings"] if "more than once" in w]
    assert len(told) == 1
    assert "skills/pdf" in told[0] and "sources/anth/skills/pdf" in told[0]
    marketplace = json.loads((library / ".claude-plugin" / "marketplace.json").read_text())
    listed = marketplace["plugins"][0]["skills"]
    names = [path.rstrip("/").rsplit("/", 1)[-1] for path in listed]
    assert sorted(names) == ["docx", "pdf"]  # each bare name once: the retained pdf
    assert "./skills/pdf" in listed
    plugin = json.loads((library / ".claude-plugin" / "plugin.json").read_text())
    assert not any(str(p).endswith("anth/skills/pdf") for p in plugin.get("skills", []))
    cli_ok(capsys, library, "hide", "pdf")  # the managed one takes the name
    marketplace = json.loads((library / ".claude-plugin" / "marketplace.json").read_text())
    assert any(p.endswith("anth/skills/pdf") for p in marketplace["plugins"][0]["skills"])
    report = json.loads(cli_ok(capsys, library, "check", "--json").out)
    assert not [w for w in report["warnings"] if "more than once" in w]


def test_claude_code_loads_each_bare_name_once(
    library: Path, sources: Path, capsys: Cap, tmp_path: Path
) -> None:
    """With the real ``claude`` (skipped without it): the marketplace route of a library
    holding a retained ``pdf`` and a source's ``pdf`` loads one ``pdf``."""
    import shutil
    import subprocess

    claude = shutil.which("claude")
    if claude is None:
        pytest.skip("claude is not on PATH")
    cli_ok(capsys, library, "retain", str(make_skill(sources, "pdf")))
    upstream = Upstream(tmp_path / "up").skill("skills/pdf").skill("skills/docx")
    upstream.commit()
    install(capsys, library, upstream, source="anth")

    def claude_says(*args: str) -> str:
        done = subprocess.run([claude, "plugin", *args], capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    claude_says("marketplace", "add", str(library))
    claude_says("install", "test-lib@test-lib")
    details = claude_says("details", "test-lib")
    assert "Skills (2)" in details and "docx, pdf" in details, details
