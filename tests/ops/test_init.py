"""`librarian init`: a new library from the template, with its first commit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.helpers import (
    assert_git_consistent,
    assert_one_error_line,
    commit_count,
    git_text,
    head,
    requires_git,
    run_main,
    trailers,
    tree_snapshot,
)

from librarian.formats.config import load_library_config, load_lock, load_tools
from librarian.library.layout import find_library

TOP_FILES = {".gitattributes", "README.md", "library.yaml", "librarian.lock", "tools.yaml",
             ".claude-plugin/plugin.json", ".claude-plugin/marketplace.json"}
EMPTY_DIRS = {"skills/", "recipes/", "drafts/", "sources/", ".claude-plugin/"}


def test_init_creates_the_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "lib"
    result = run_main(capsys, "init", str(target), "--name", "my-library", "--json")
    assert result.code == 0, result.err
    receipt = result.json
    assert receipt["kind"] == "library"
    assert receipt["name"] == "my-library"
    assert receipt["path"] == str(target)
    assert receipt["commit"] == head(target)

    snapshot = tree_snapshot(target)
    files = {path for path, value in snapshot.items() if value != "dir"}
    dirs = {path for path, value in snapshot.items() if value == "dir"}
    assert files == TOP_FILES
    assert dirs == EMPTY_DIRS
    assert (target / ".git").is_dir()
    assert (target / ".gitattributes").read_text().splitlines().count("* -text") == 1

    config = load_library_config((target / "library.yaml").read_bytes())
    assert config.name == "my-library"
    assert config.policy.max_item_files == 2000
    assert load_tools((target / "tools.yaml").read_bytes()) == {}
    assert load_lock((target / "librarian.lock").read_bytes()) == {}
    assert commit_count(target) == 1


@requires_git
def test_init_commit_is_a_root_commit_with_the_init_trailer(library: Path) -> None:
    assert git_text(library, "rev-list", "--count", "HEAD").strip() == "1"
    assert git_text(library, "rev-list", "--parents", "-n1", "HEAD").split()[1:] == []
    assert ("Librarian-Event", "init") in trailers(library)
    assert git_text(library, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    committed = set(git_text(library, "ls-tree", "--name-only", "HEAD").split())
    # the template's examples/ is not copied
    assert committed == {p.split("/")[0] for p in TOP_FILES}
    assert_git_consistent(library)


def test_init_default_name_comes_from_the_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "My Team_Lib"
    assert run_main(capsys, "init", str(target)).code == 0
    assert load_library_config((target / "library.yaml").read_bytes()).name == "my-team-lib"


def test_init_without_path_uses_the_current_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "here"
    target.mkdir()
    monkeypatch.chdir(target)
    result = run_main(capsys, "init", "--json")
    assert result.code == 0, result.err
    assert result.json["path"] == str(target)
    assert (target / "library.yaml").is_file()
    assert find_library().root == target


def test_init_creates_missing_parents(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "a" / "b" / "lib"
    assert run_main(capsys, "init", str(target)).code == 0
    assert (target / "library.yaml").is_file()


def test_init_refuses_an_existing_library(
    library: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = (head(library), tree_snapshot(library, skip_git=False))
    result = run_main(capsys, "init", str(library), "--json")
    assert result.code == 3
    assert result.json["kind"] == "error" and result.json["exit_code"] == 3
    assert "already a library" in assert_one_error_line(result.err)
    assert (head(library), tree_snapshot(library, skip_git=False)) == before


def test_init_refuses_a_non_empty_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "busy"
    target.mkdir()
    (target / "notes.txt").write_text("mine\n")
    before = tree_snapshot(target, skip_git=False)
    result = run_main(capsys, "init", str(target))
    assert result.code == 2
    assert result.out == ""
    assert "not empty" in assert_one_error_line(result.err)
    assert tree_snapshot(target, skip_git=False) == before


def test_init_refuses_a_plain_git_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dulwich.repo import Repo

    target = tmp_path / "repo"
    target.mkdir()
    Repo.init(str(target)).close()
    before = tree_snapshot(target, skip_git=False)
    assert run_main(capsys, "init", str(target)).code == 2
    assert tree_snapshot(target, skip_git=False) == before


def test_init_refuses_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    assert run_main(capsys, "init", str(target)).code == 2
    assert target.read_text() == "x"


@pytest.mark.parametrize("name", [
    "Bad_Name", "-lead", "trail-", "two--dashes", "x" * 65,
    "",
])
def test_init_refuses_an_invalid_name_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    target = tmp_path / "new"
    result = run_main(capsys, "init", str(target), "--name", name, "--json")
    assert result.code == 2
    assert json.loads(result.out)["exit_code"] == 2
    assert not target.exists()


def test_init_into_an_empty_existing_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "empty"
    target.mkdir()
    assert run_main(capsys, "init", str(target), "--name", "ok").code == 0
    assert (target / "library.yaml").is_file()
    assert_git_consistent(target)


def test_library_is_found_by_option_environment_and_parent(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(library / "skills")
    assert run_main(capsys, "status").code == 0  # nearest parent holding library.yaml
    monkeypatch.chdir(elsewhere)
    assert run_main(capsys, "status").code == 2
    monkeypatch.setenv("LIBRARIAN_LIBRARY", str(library))
    assert run_main(capsys, "status").code == 0
    monkeypatch.delenv("LIBRARIAN_LIBRARY")
    assert run_main(capsys, "--library", str(library), "status").code == 0
    assert tree_snapshot(elsewhere) == {}
