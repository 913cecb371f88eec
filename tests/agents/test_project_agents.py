"""The agents' project routes, judged by the real clients when they are on PATH (``npm
install @openai/codex @anthropic-ai/claude-code``; skipped otherwise): Codex reads a
project's library as ``<repo>/.agents/skills`` over the user's ``~/.agents/skills``; Claude
Code loads it as a plugin from the repository, and runs ``librarian mcp`` from the
project's ``.mcp.json``, which serves the project's layer over the user's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import GIT, git, make_skill, run_main, write

Cap = pytest.CaptureFixture[str]
pytestmark = pytest.mark.skipif(GIT is None, reason="needs the git binary")


@pytest.fixture
def project(isolated_environment: Path, tmp_path: Path, capsys: Cap,
            monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose ``.agents`` holds ``project-skill``, and a user library at
    ``~/.agents`` holding ``user-skill``."""
    user = isolated_environment / ".agents"
    src = tmp_path / "src"
    assert run_main(capsys, "init", str(user)).code == 0
    assert run_main(capsys, "--library", str(user), "retain", str(make_skill(
        src, "user-skill", description="Only the user has this one."))).code == 0
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write(root / "README.md", "# A project\n")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "first")
    monkeypatch.chdir(root)
    assert run_main(capsys, "init", ".agents").code == 0
    assert run_main(capsys, "retain", str(make_skill(
        src, "project-skill", description="Only the project has this one."))).code == 0
    return root


def _client(name: str, *args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    return subprocess.run([name, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=180, check=False, env=env)


@pytest.mark.skipif(shutil.which("codex") is None, reason="Codex is not on PATH")
def test_codex_lists_the_project_layer_over_the_users(
        project: Path, isolated_environment: Path) -> None:
    done = _client("codex", "debug", "prompt-input", cwd=project, home=isolated_environment)
    assert done.returncode == 0, done.stderr
    assert str(project / ".agents" / "skills") in done.stdout
    assert "project-skill" in done.stdout and "Only the project has this one." in done.stdout
    assert "user-skill" in done.stdout


@pytest.mark.skipif(shutil.which("claude") is None, reason="Claude Code is not on PATH")
def test_claude_code_loads_the_project_library_as_a_plugin_and_over_mcp(
        project: Path, isolated_environment: Path) -> None:
    details = _client("claude", "--plugin-dir", ".agents", "plugin", "details", "agents",
                      cwd=project, home=isolated_environment)
    assert details.returncode == 0, details.stderr
    assert "project-skill" in details.stdout
    # the project's .mcp.json runs `librarian mcp` in the project: its layer over the user's
    server = {"command": sys.executable, "args": ["-m", "librarian", "mcp"],
              "env": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}}
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"librarian": server}}))
    write(project / ".claude" / "settings.local.json", '{"enableAllProjectMcpServers": true}')
    listed = _client("claude", "mcp", "list", cwd=project, home=isolated_environment)
    assert "librarian" in listed.stdout and "Connected" in listed.stdout, \
        listed.stdout + listed.stderr
