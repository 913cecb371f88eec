"""Codex reads a library at ``~/.agents`` as its skills root; ``export codex-config``
hides what the library hides. Codex itself judges it when it is on PATH."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import cli_out, make_skill, run_main

Cap = pytest.CaptureFixture[str]



@pytest.fixture
def agents_library(isolated_environment: Path, sources: Path, capsys: Cap) -> Path:
    root = isolated_environment / ".agents"
    assert run_main(capsys, "init", str(root)).code == 0
    cli_out(capsys, root, "retain", str(make_skill(sources, "visible-one")))
    cli_out(capsys, root, "retain", str(make_skill(sources, "hidden-two")))
    cli_out(capsys, root, "hide", "hidden-two")
    return root


def test_export_codex_config_disables_exactly_the_hidden_skills(
    agents_library: Path, capsys: Cap
) -> None:
    document = json.loads(cli_out(capsys, agents_library, "export", "codex-config", "--json"))
    hidden = str(agents_library / "skills" / "hidden-two" / "SKILL.md")
    assert document["kind"] == "codex_config"
    assert document["hidden"] == [hidden]
    if sys.version_info >= (3, 11):
        import tomllib

        parsed = tomllib.loads(document["toml"])
        assert parsed == {"skills": {"config": [{"path": hidden, "enabled": False}]}}
    cli_out(capsys, agents_library, "show", "hidden-two")
    again = json.loads(cli_out(capsys, agents_library, "export", "codex-config", "--json"))
    assert again["hidden"] == []


@pytest.mark.skipif(shutil.which("codex") is None, reason="Codex is not on PATH")
def test_codex_lists_the_library_and_hides_what_it_hides(
    agents_library: Path, isolated_environment: Path, tmp_path: Path, capsys: Cap
) -> None:
    def skills_block() -> str:
        done = subprocess.run(["codex", "debug", "prompt-input"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, check=False,
                              env={**os.environ, "HOME": str(isolated_environment)})
        assert done.returncode == 0, done.stderr
        return done.stdout

    before = skills_block()
    assert "visible-one" in before and "hidden-two" in before
    config = isolated_environment / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(cli_out(capsys, agents_library, "export", "codex-config"))
    after = skills_block()
    assert "visible-one" in after and "hidden-two" not in after
