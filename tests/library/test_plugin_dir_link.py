"""``.claude-plugin`` committed as a symbolic link (a hostile pull): every change to the
library is refused with exit 2 naming it, before anything is written — the draft that
never touches the manifests as well as the skill that does."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.helpers import assert_one_error_line, cli, git, head, make_skill, tree_snapshot


def _linked(library: Path, tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(library / ".claude-plugin")
    (library / ".claude-plugin").symlink_to(outside)
    git(library, "add", "-A")
    git(library, "commit", "-q", "-m", "plugin manifests elsewhere")
    return outside


@pytest.mark.parametrize("args", [("--draft",), ()])
def test_a_linked_plugin_directory_is_refused_before_anything_is_written(
    capsys: pytest.CaptureFixture[str], library: Path, sources: Path, tmp_path: Path,
    args: tuple[str, ...]
) -> None:
    outside = _linked(library, tmp_path)
    before, tree = head(library), tree_snapshot(library)
    result = cli(capsys, library, "retain", str(make_skill(sources, "notes")), *args)
    assert result.code == 2, result.err
    assert ".claude-plugin" in assert_one_error_line(result.err)
    assert head(library) == before and tree_snapshot(library) == tree
    assert list(outside.iterdir()) == []


def test_the_committed_link_is_refused_when_the_work_tree_lost_it(
    capsys: pytest.CaptureFixture[str], library: Path, sources: Path, tmp_path: Path
) -> None:
    _linked(library, tmp_path)
    (library / ".claude-plugin").unlink()
    before = head(library)
    result = cli(capsys, library, "retain", str(make_skill(sources, "notes")))
    assert result.code == 2, result.err
    assert "committed as a symbolic link" in assert_one_error_line(result.err)
    assert head(library) == before and not (library / "skills" / "notes").exists()
