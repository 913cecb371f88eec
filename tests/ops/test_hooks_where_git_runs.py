"""``hooks install`` writes where git runs the hooks and nowhere else: never through a
symlinked ``.git/hooks``, into ``core.hooksPath`` when it is inside the library (refused,
naming it, when it is outside), and ``--force`` keeps the hook it replaces as a backup."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import (
    VENV_BIN,
    assert_one_error_line,
    cli,
    git,
    head,
    requires_git,
    skill_md,
    write,
)

from librarian.core.resources import hooks_dir
from librarian.ops.hooks import render_hook


def test_a_symlinked_hooks_directory_is_refused(
    capsys: pytest.CaptureFixture[str], library: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    hooks = library / ".git" / "hooks"
    if hooks.exists():
        for child in hooks.iterdir():
            child.unlink()
        hooks.rmdir()
    hooks.symlink_to(outside)
    result = cli(capsys, library, "hooks", "install")
    assert result.code == 2, result.err
    assert ".git/hooks is a symbolic link" in assert_one_error_line(result.err)
    assert list(outside.iterdir()) == []


def test_force_keeps_a_custom_hook_as_a_backup(
    capsys: pytest.CaptureFixture[str], library: Path
) -> None:
    hook = library / ".git" / "hooks" / "pre-commit"
    write(hook, "#!/bin/sh\necho mine\n", mode=0o755)
    refused = cli(capsys, library, "hooks", "install")
    assert refused.code == 3 and "pre-commit.backup" in refused.err
    result = cli(capsys, library, "hooks", "install", "--force", "--json")
    assert result.code == 0, result.err
    backup = hook.with_name("pre-commit.backup")
    assert result.json["backups"] == [str(backup)]
    assert result.json["path"] == str(hook.parent)
    assert backup.read_text() == "#!/bin/sh\necho mine\n"
    assert hook.read_bytes() == render_hook(hooks_dir() / "pre-commit")
    # Installing again over librarian's own hook backs nothing up.
    again = cli(capsys, library, "hooks", "install", "--force", "--json")
    assert again.json["backups"] == []
    # A second custom hook does not overwrite the first backup.
    write(hook, "#!/bin/sh\necho second\n", mode=0o755)
    text = cli(capsys, library, "hooks", "install", "--force").out
    assert "pre-commit.backup-2" in text
    assert backup.read_text() == "#!/bin/sh\necho mine\n"


@requires_git
def test_core_hooks_path_inside_the_library_is_where_they_go_and_run(
    capsys: pytest.CaptureFixture[str], library: Path
) -> None:
    git(library, "config", "core.hooksPath", ".githooks")
    result = cli(capsys, library, "hooks", "install", "--json")
    assert result.code == 0, result.err
    assert result.json["path"] == str(library / ".githooks")
    assert (library / ".githooks" / "pre-commit").is_file()
    assert not (library / ".git" / "hooks" / "pre-commit").exists()
    # git runs it: a bad skill is refused at commit time.
    before = head(library)
    write(library / "skills" / "bad" / "SKILL.md", b"---\nname: bad\n---\nno description\n")
    git(library, "add", "skills/bad")
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin"}
    refused = git(library, "commit", "-q", "-m", "bad", check=False, env=env)
    assert refused.returncode != 0 and head(library) == before
    write(library / "skills" / "bad" / "SKILL.md", skill_md("bad"))
    git(library, "add", "skills/bad")
    assert git(library, "commit", "-q", "-m", "good", check=False, env=env).returncode == 0


@requires_git
def test_core_hooks_path_outside_the_library_is_refused_naming_it(
    capsys: pytest.CaptureFixture[str], library: Path, tmp_path: Path
) -> None:
    shared = tmp_path / "shared-hooks"
    git(library, "config", "core.hooksPath", str(shared))
    result = cli(capsys, library, "hooks", "install")
    assert result.code == 2, result.err
    line = assert_one_error_line(result.err)
    assert "core.hooksPath" in line and str(shared) in line
    assert not shared.exists()
    assert not (library / ".git" / "hooks" / "pre-commit").exists()
