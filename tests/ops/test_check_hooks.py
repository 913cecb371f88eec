"""`librarian check [--staged]` and `librarian hooks install` (plain-git users)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from support.helpers import (
    VENV_BIN,
    assert_one_error_line,
    cli,
    git,
    head,
    make_skill,
    requires_git,
    skill_md,
    write,
)

from librarian.agents.claude_manifests import GENERATED
from librarian.core.resources import hooks_dir
from librarian.library.layout import Library
from librarian.ops.hooks import render_hook
from librarian.ops.retention import retain


@pytest.fixture
def stocked(library: Path, sources: Path) -> Path:
    retain(Library(library, GENERATED), make_skill(sources, "alpha"))
    return library



def test_check_passes_on_a_clean_library(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in (["check"], ["check", "--staged"]):
        result = cli(capsys, stocked, *args)
        assert result.code == 0, result.err
        assert result.out.startswith("ok: 1 item in")
    document = json.loads(cli(capsys, stocked, "check", "--json").out)
    assert document["kind"] == "check" and document["ok"] is True
    assert document["problems"] == []


@requires_git
def test_check_finds_a_symlink_added_with_plain_git(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (stocked / "skills" / "alpha" / "link").symlink_to("SKILL.md")
    # Work tree scope sees it before it is staged; the index scope does not yet.
    work = cli(capsys, stocked, "check")
    assert work.code == 2
    assert "skills/alpha/link" in work.out and "symlink" in work.out  # the report
    assert_one_error_line(work.err)  # and one error line
    assert cli(capsys, stocked, "check", "--staged").code == 0
    git(stocked, "add", "skills/alpha/link")
    staged = cli(capsys, stocked, "check", "--staged", "--json")
    assert staged.code == 2
    document = json.loads(staged.out)
    assert document["ok"] is False and document["scope"] == "index"
    assert any("skills/alpha/link" in p and "symlink" in p for p in document["problems"])


@requires_git
def test_check_finds_a_secret_added_with_plain_git(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(stocked / "skills" / "alpha" / ".env", "TOKEN=abc\n")
    git(stocked, "add", "-f", "skills/alpha/.env")
    for args in (["check"], ["check", "--staged"]):
        result = cli(capsys, stocked, *args, "--json")
        assert result.code == 2
        problems = json.loads(result.out)["problems"]
        assert any("looks like a secret" in p and ".env" in p for p in problems), problems


@requires_git
def test_check_problems_name_the_library_path(
    stocked: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    retain(Library(stocked, GENERATED), make_skill(sources, "beta"))
    write(stocked / "skills" / "beta" / ".env", "TOKEN=abc\n")
    write(stocked / "skills" / "alpha" / "SKILL.md", b"---\nname: alpha\n---\nbody\n")
    problems = json.loads(cli(capsys, stocked, "check", "--json").out)["problems"]
    assert any(p.startswith("skills/beta/.env") for p in problems), problems
    assert any(p.startswith("skills/alpha") and "description" in p for p in problems), problems


def test_check_finds_format_and_name_problems(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(stocked / "skills" / "wrong" / "SKILL.md", skill_md("not-wrong"))
    write(stocked / "recipes" / "skill-here" / "SKILL.md", skill_md("skill-here"))
    write(stocked / "skills" / "stray.md", "not in an item directory\n")
    result = cli(capsys, stocked, "check", "--json")
    assert result.code == 2
    document = json.loads(result.out)
    problems = document["problems"]
    # a skill is named by its directory: a differing frontmatter name is a warning
    assert not any("skills/wrong" in p for p in problems), problems
    assert document["warnings"] == [
        "skills/wrong/SKILL.md: nonconforming [name-directory]: name 'not-wrong' differs from "
        "the directory 'wrong', which names the item"]
    assert any("recipes/skill-here" in p and "does not belong" in p for p in problems), problems
    assert any(p.startswith("skills/stray.md") for p in problems), problems


# -- hooks -------------------------------------------------------------------------------------


def test_hooks_install_copies_executable_files(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = cli(capsys, stocked, "hooks", "install", "--json")
    assert result.code == 0, result.err
    installed = json.loads(result.out)["installed"]
    assert "pre-commit" in installed
    for name in installed:
        target = stocked / ".git" / "hooks" / name
        assert not target.is_symlink()
        st = target.lstat()
        assert stat.S_ISREG(st.st_mode) and st.st_nlink == 1
        assert st.st_mode & stat.S_IXUSR
        assert target.read_bytes() == render_hook(hooks_dir() / name)
    # installing again is harmless; a different hook of the user's is kept unless --force
    assert cli(capsys, stocked, "hooks", "install").code == 0
    mine = stocked / ".git" / "hooks" / "pre-commit"
    mine.write_text("#!/bin/sh\nexit 0\n")
    assert cli(capsys, stocked, "hooks", "install").code == 3
    assert mine.read_text() == "#!/bin/sh\nexit 0\n"
    assert cli(capsys, stocked, "hooks", "install", "--force").code == 0
    assert mine.read_bytes() == render_hook(hooks_dir() / "pre-commit")


def _hook_env() -> dict[str, str]:
    return {"PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


@requires_git
def test_pre_commit_hook_refuses_a_bad_skill(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(capsys, stocked, "hooks", "install").code == 0
    before = head(stocked)
    write(stocked / "skills" / "bad" / "SKILL.md", b"---\nname: bad\n---\nno description\n")
    git(stocked, "add", "skills/bad")
    refused = git(stocked, "commit", "-q", "-m", "add bad skill", check=False, env=_hook_env())
    assert refused.returncode != 0
    assert b"description" in refused.stderr
    assert head(stocked) == before

    # A valid skill goes through the same hook.
    write(stocked / "skills" / "bad" / "SKILL.md", skill_md("bad"))
    git(stocked, "add", "skills/bad")
    accepted = git(stocked, "commit", "-q", "-m", "add good skill", check=False, env=_hook_env())
    assert accepted.returncode == 0, accepted.stderr
    assert head(stocked) != before


@requires_git
def test_pre_commit_hook_refuses_a_bad_edit_committed_with_commit_all(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(capsys, stocked, "hooks", "install").code == 0
    before = head(stocked)
    (stocked / "skills" / "alpha" / "SKILL.md").write_bytes(b"---\nname: alpha\n---\nbody\n")
    result = git(stocked, "commit", "-a", "-q", "-m", "break it", check=False, env=_hook_env())
    assert result.returncode != 0
    assert head(stocked) == before


@requires_git
def test_the_hook_finds_the_librarian_that_installed_it(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Outside the virtual environment (no librarian on PATH) the hook
    runs the interpreter written into it; without that either, it says what to do."""
    assert cli(capsys, stocked, "hooks", "install").code == 0
    hook = stocked / ".git" / "hooks" / "pre-commit"
    assert sys.executable in hook.read_text()
    bare_path = {"PATH": "/usr/bin:/bin"}
    write(stocked / "skills" / "bad" / "SKILL.md", b"---\nname: bad\n---\nno description\n")
    git(stocked, "add", "skills/bad")
    refused = git(stocked, "commit", "-q", "-m", "bad", check=False, env=bare_path)
    assert refused.returncode != 0 and b"description" in refused.stderr
    write(stocked / "skills" / "bad" / "SKILL.md", skill_md("bad"))
    git(stocked, "add", "skills/bad")
    assert git(stocked, "commit", "-q", "-m", "good", check=False, env=bare_path).returncode == 0
    hook.write_bytes(render_hook(hooks_dir() / "pre-commit", "/nonexistent/python"))
    write(stocked / "skills" / "bad" / "extra.md", b"more\n")
    git(stocked, "add", "skills/bad")
    lost = git(stocked, "commit", "-q", "-m", "x", check=False, env=bare_path)
    assert lost.returncode == 1
    assert b"librarian not found" in lost.stderr and b"hooks install --force" in lost.stderr
