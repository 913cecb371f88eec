"""An item changed upstream and untouched locally is updated in place: only the entries
upstream changed are staged, swapped and re-indexed (``TreeChange.work_is_base``,
``git.trees.entry_changes``), as ``git checkout`` rewrites only the files that changed.
Recovery from a kill at each of those steps is tests/txn/test_kill_every_step.py's (its
``kit`` item changes in every way shown here)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.helpers import (
    assert_git_consistent,
    cli,
    git_text,
    head,
    recipe_yaml,
    run_main,
    tree_snapshot,
)
from support.sources_helpers import MODE_EXEC, Upstream, install

from librarian.content.worktree import hash_work_dir, write_files
from librarian.core.model import ItemFile
from librarian.formats.claude_plugin import MARKETPLACE_FILE, PLUGIN_FILE, listed_skills
from librarian.git.repo import GitStore
from librarian.git.trees import entry_changes
from librarian.txn import staging

Cap = pytest.CaptureFixture[str]
KIT = "sources/team/skills/kit"


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/kit").skill("skills/other")
    up.put("skills/kit/scripts/old.sh", b"#!/bin/sh\necho old\n", MODE_EXEC)
    up.put("skills/kit/references/keep.md", b"Kept.\n").put("skills/kit/notes.md", b"N.\n")
    up.put("skills/kit/extra", b"a file, then a directory\n")
    up.commit("first")
    return up


def _change_kit(upstream: Upstream) -> None:
    upstream.skill("skills/kit", body="Two.\n").remove("skills/kit/scripts")
    upstream.put("skills/kit/assets/new.txt", b"New.\n")
    upstream.put("skills/kit/notes.md", b"N.\n", MODE_EXEC)
    upstream.remove("skills/kit/extra").put("skills/kit/extra/inner.md", b"Inner.\n")
    upstream.commit("second")


def _upstream_item(upstream: Upstream, prefix: str) -> dict[str, object]:
    """What tree_snapshot shows of an item installed from ``upstream``."""
    out: dict[str, object] = {}
    for path, (data, mode) in upstream.files.items():
        if path.startswith(prefix + "/"):
            rel = path[len(prefix) + 1:]
            out[rel] = ("file", mode == MODE_EXEC, data)
            parts = rel.split("/")
            out.update({"/".join(parts[:d]) + "/": "dir" for d in range(1, len(parts))})
    return out


def test_an_update_rewrites_only_the_entries_upstream_changed(
    library: Path, upstream: Upstream, capsys: Cap
) -> None:
    install(capsys, library, upstream)
    kit, other = library / KIT, library / "sources/team/skills/other"
    kept = {p: (kit / p).stat().st_ino for p in ("references/keep.md", "references")}
    other_ino = (other / "SKILL.md").stat().st_ino
    old_skill = (kit / "SKILL.md").stat().st_ino
    _change_kit(upstream)
    result = cli(capsys, library, "update", "--json")
    assert result.code == 0, result.err
    assert [i["action"] for i in result.json["plans"][0]["items"]] == ["update", "keep"]
    assert tree_snapshot(kit) == _upstream_item(upstream, "skills/kit")
    assert (kit / "notes.md").stat().st_mode & stat.S_IXUSR
    # What upstream left alone is the very same file (and directory): never rewritten.
    assert {p: (kit / p).stat().st_ino for p in kept} == kept
    assert (other / "SKILL.md").stat().st_ino == other_ino
    assert (kit / "SKILL.md").stat().st_ino != old_skill
    assert_git_consistent(library)
    assert not list((library / ".git" / "librarian").glob("stage/*"))
    assert not list((library / ".git" / "librarian").glob("trash/*"))


def test_a_forced_update_still_overwrites_every_local_edit_of_the_item(
    library: Path, upstream: Upstream, capsys: Cap
) -> None:
    install(capsys, library, upstream)
    kit = library / KIT
    (kit / "SKILL.md").write_bytes(b"---\nname: kit\ndescription: mine\n---\nMine.\n")
    (kit / "references" / "keep.md").write_bytes(b"my edit of a file upstream keeps\n")
    _change_kit(upstream)
    assert cli(capsys, library, "update").code == 3  # SKILL.md conflicts
    result = cli(capsys, library, "update", "--force")
    assert result.code == 0, result.err
    assert tree_snapshot(kit) == _upstream_item(upstream, "skills/kit")
    assert_git_consistent(library)


def test_an_in_place_entry_that_does_not_match_its_id_changes_nothing(
    library: Path, upstream: Upstream, capsys: Cap, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(capsys, library, upstream)
    _change_kit(upstream)
    original_read, original_stage = GitStore.read_blob, staging.stage_changes
    in_stage = []

    def corrupted(self: GitStore, sha: bytes) -> bytes:  # only while staging
        data = original_read(self, sha)
        return data + b"!" if in_stage and data.startswith(b"---") else data

    def stage(*args: Any) -> None:
        in_stage.append(True)
        original_stage(*args)

    old, snapshot = head(library), tree_snapshot(library)
    monkeypatch.setattr(GitStore, "read_blob", corrupted)
    monkeypatch.setattr(staging, "stage_changes", stage)
    result = cli(capsys, library, "update")
    assert result.code == 4, result.err
    assert "SKILL.md: the staged content does not match the planned blob" in result.err
    assert head(library) == old and tree_snapshot(library) == snapshot
    assert not list((library / ".git" / "librarian").glob("stage/*"))


def test_the_manifests_are_walked_only_when_an_update_can_change_the_visible_skills(
    library: Path, upstream: Upstream, capsys: Cap
) -> None:
    install(capsys, library, upstream)
    listed = listed_skills((library / MARKETPLACE_FILE).read_bytes())
    assert listed is not None and f"{KIT}" in listed
    _change_kit(upstream)  # content only: the same skill
    assert cli(capsys, library, "update").code == 0
    assert listed_skills((library / MARKETPLACE_FILE).read_bytes()) == listed
    # kit becomes a recipe: no longer a visible skill, and the same commit says so.
    upstream.remove("skills/kit/SKILL.md").put("skills/kit/recipe.yaml", recipe_yaml("kit"))
    upstream.put("skills/kit/run.sh", b"#!/bin/sh\necho hi\n", MODE_EXEC).commit("third")
    assert cli(capsys, library, "update").code == 0, capsys.readouterr()
    assert f"{KIT}" not in (listed_skills((library / MARKETPLACE_FILE).read_bytes()) or ())
    changed = git_text(library, "show", "--name-only", "--format=", "HEAD").split()
    assert MARKETPLACE_FILE in changed and PLUGIN_FILE in changed
    assert run_main(capsys, "--library", str(library), "check").code == 0
    assert_git_consistent(library)


# -- entry_changes: applied to a directory holding the old tree, it gives the new one ------

_NAMES = st.sampled_from(["a", "b", "c.md", "d"])
_PATHS = st.lists(_NAMES, min_size=1, max_size=3).map("/".join)
_FILES = st.dictionaries(_PATHS, st.tuples(st.booleans(), st.sampled_from([b"1\n", b"2\n"])),
                         min_size=1, max_size=6)


def _item(files: dict[str, tuple[bool, bytes]]) -> tuple[ItemFile, ...]:
    """``files`` without paths that clash (a file where another path needs a directory)."""
    kept: dict[str, tuple[bool, bytes]] = {}
    for path in sorted(files, key=len):
        parts = path.split("/")
        if any("/".join(parts[:d]) in kept for d in range(1, len(parts))):
            continue
        kept[path] = files[path]
    kept = {p: v for p, v in kept.items() if not any(q.startswith(p + "/") for q in kept)}
    return tuple(ItemFile(p, x, d) for p, (x, d) in sorted(kept.items()))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=_FILES, new=_FILES)
def test_entry_changes_turn_the_old_tree_into_the_new(
    library: Path, tmp_path_factory: pytest.TempPathFactory,
    old: dict[str, tuple[bool, bytes]], new: dict[str, tuple[bool, bytes]]
) -> None:
    old_files, new_files = _item(old), _item(new)
    work = tmp_path_factory.mktemp("work") / "item"
    write_files(work, old_files)
    with GitStore(library) as store:
        before, after = store.files_tree(old_files), store.files_tree(new_files)
        changes = entry_changes(store, before, after, "")
        assert changes is not None
        paths = [p for p, _ in changes]
        assert not any(q.startswith(p + "/") for p in paths for q in paths)
        assert changes == [] or before != after
        for path, entry in changes:
            target = work / path
            if target.is_dir():
                for root, dirs, names in os.walk(target, topdown=False):
                    for name in names:
                        Path(root, name).unlink()
                    for name in dirs:
                        Path(root, name).rmdir()
                target.rmdir()
            elif target.exists():
                target.unlink()
            if entry is None:
                continue
            if stat.S_ISDIR(entry.mode):
                write_files(target, store.read_files(entry.sha))
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(store.read_blob(entry.sha))
                target.chmod(0o755 if entry.mode == 0o100755 else 0o644)
        hashed = hash_work_dir(work)
        assert hashed is not None and hashed.tree_sha1 == after
        assert all(names or dirs for _, dirs, names in os.walk(work))  # no empty directory
