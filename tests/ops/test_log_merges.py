"""The audit follows every parent: events that arrived through a merge are listed by
``log``, ``log NAME`` and ``inspect NAME``, with their author and date."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.helpers import cli, git_text, make_recipe, make_skill

from librarian.agents.claude_manifests import GENERATED
from librarian.git import GitStore, walk_history

Cap = pytest.CaptureFixture[str]


def _git(cwd: Path, *args: str, author: str = "Ann") -> None:
    env = {"GIT_AUTHOR_NAME": author, "GIT_AUTHOR_EMAIL": f"{author}@example.org",
           "GIT_COMMITTER_NAME": author, "GIT_COMMITTER_EMAIL": f"{author}@example.org",
           "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _two_machines(library: Path, tmp_path: Path, capsys: Cap) -> Path:
    """``library`` and a clone of it each retain an item (a recipe here, so that no
    generated file differs); the clone's work is merged into ``library`` with a merge
    commit (``git pull --no-rebase``)."""
    assert cli(capsys, library, "retain", str(make_skill(tmp_path / "a", "ours-1"))).code == 0
    other = tmp_path / "other"
    _git(tmp_path, "clone", "-q", str(library), str(other))
    assert cli(capsys, other, "retain", str(make_skill(tmp_path / "b", "theirs-1"))).code == 0
    assert cli(capsys, library, "retain", str(make_recipe(tmp_path / "c", "ours-2"))).code == 0
    _git(library, "pull", "-q", "--no-rebase", "--no-edit", str(other), "HEAD", author="Bob")
    assert len(git_text(library, "log", "-1", "--format=%P").split()) == 2  # a merge
    return other


def test_log_lists_events_from_both_sides_of_a_merge(library: Path, tmp_path: Path,
                                                      capsys: Cap) -> None:
    _two_machines(library, tmp_path, capsys)
    events = cli(capsys, library, "log", "--json").json["events"]
    subjects = [e["subject"] for e in events]
    assert "retain skill theirs-1" in subjects
    assert "retain skill ours-1" in subjects and "retain recipe ours-2" in subjects
    # Every librarian commit git log lists, and in git log's order.
    expected = [s for s in git_text(library, "log", "--format=%s").splitlines()
                if s.startswith(("retain", "init"))]
    assert subjects == expected


def test_log_and_inspect_of_a_merged_item(library: Path, tmp_path: Path, capsys: Cap) -> None:
    _two_machines(library, tmp_path, capsys)
    followed = cli(capsys, library, "log", "theirs-1")
    assert followed.code == 0 and "retain skill theirs-1" in followed.out
    assert "(no retention events)" not in followed.out
    report = cli(capsys, library, "inspect", "theirs-1", "--json").json
    assert len(report["revisions"]) == 1
    assert report["revisions"][0]["author"].startswith("librarian")
    text = cli(capsys, library, "inspect", "theirs-1").out
    assert "revisions  1" in text


def test_the_text_log_shows_date_and_author(library: Path, tmp_path: Path, capsys: Cap) -> None:
    _two_machines(library, tmp_path, capsys)
    line = next(text for text in cli(capsys, library, "log").out.splitlines()
                if "theirs-1" in text and not text.startswith(" "))
    commit, day, clock, rest = line.split(" ", 3)
    assert len(day) == 10 and day[4] == "-" and ":" in clock
    assert rest.split(":", 1)[0]  # the author's name before the subject


def test_history_visits_each_commit_once_newest_first(library: Path, tmp_path: Path,
                                                       capsys: Cap) -> None:
    _two_machines(library, tmp_path, capsys)
    store = GitStore(library)
    walked = [info.id.decode() for info in walk_history(store, store.head())]
    assert sorted(walked) == sorted(git_text(library, "rev-list", "HEAD").split())
    assert len(walked) == len(set(walked))
    times = [store.commit(c.encode()).time for c in walked]
    assert times == sorted(times, reverse=True)
    assert GENERATED  # libraries opened by tests carry the manifests' maker
