"""`update` killed by SIGKILL at several points, then recovered: the library is exactly
before or exactly after the update, and no local edit is lost."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import pytest
from support.helpers import GIT, git, git_text, head, run_main, run_process, tree_snapshot
from support.sources_helpers import Upstream

from librarian.agents.claude_manifests import GENERATED
from librarian.formats.config import load_lock

pytestmark = pytest.mark.crash

Cap = pytest.CaptureFixture[str]

#: crash point -> whether the update is committed once recovered
POINTS = {
    "update-after-fetch": False,
    "update-after-backup": False,
    "after-objects": False,
    "after-journal": False,
    "after-cas": True,
    "after-swap": True,
}


def _prepare(tmp_path: Path, capsys: Cap) -> tuple[Path, Upstream]:
    from librarian.ops.create import init_library

    library = tmp_path / "lib"
    init_library(library, "crash-lib", GENERATED)
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/pdf").skill("skills/docx").skill("skills/keep").recipe("recipes/review")
    up.commit("first")
    args = ("--library", str(library))
    assert run_main(capsys, *args, "source", "add", "team", up.url).code == 0
    assert run_main(capsys, *args, "update").code == 0
    # local edits: one upstream leaves alone (kept), one upstream changes (forced over)
    kept = library / "sources" / "team" / "skills" / "keep" / "SKILL.md"
    kept.write_bytes(kept.read_bytes() + b"kept local edit\n")
    forced = library / "sources" / "team" / "skills" / "pdf" / "SKILL.md"
    forced.write_bytes(forced.read_bytes() + b"forced local edit\n")
    up.skill("skills/pdf", body="Upstream two.\n").remove("skills/docx").skill("skills/new")
    up.recipe("recipes/review", script="echo two\n").commit("second")
    return library, up


def _backup_refs(library: Path) -> list[str]:
    refs = library / ".git" / "refs" / "librarian" / "backups"
    return sorted(p.name for p in refs.rglob("*") if p.is_file()) if refs.exists() else []


@pytest.mark.slow
@pytest.mark.parametrize("point", list(POINTS))
def test_killed_update_is_recovered_to_exactly_before_or_after(
    tmp_path: Path, capsys: Cap, point: str
) -> None:
    library, _ = _prepare(tmp_path, capsys)
    reference = tmp_path / "reference"
    shutil.copytree(library, reference, symlinks=True)
    before_head, before = head(library), tree_snapshot(library)
    done = run_process("--library", str(reference), "update", "--force")
    assert done.returncode == 0, done.stderr
    after = tree_snapshot(reference)
    assert after != before

    killed = run_process("--library", str(library), "update", "--force",
                         env={"LIBRARIAN_CRASH_AT": point})
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr)
    recovered = run_process("--library", str(library), "recover", "--json")
    assert recovered.returncode == 0, recovered.stderr

    pdf = library / "sources" / "team" / "skills" / "pdf"
    kept = library / "sources" / "team" / "skills" / "keep" / "SKILL.md"
    assert kept.read_text().endswith("kept local edit\n")  # never touched
    if POINTS[point]:
        assert head(library) != before_head
        assert tree_snapshot(library) == after
        assert load_lock((library / "librarian.lock").read_bytes()) == load_lock(
            (reference / "librarian.lock").read_bytes())
    else:
        assert head(library) == before_head
        assert tree_snapshot(library) == before
        assert (pdf / "SKILL.md").read_text().endswith("forced local edit\n")
    if point != "update-after-fetch":
        # the overwritten edit is saved in a backup before anything else changes
        assert _backup_refs(library), "no backup ref"
    if GIT is not None:
        porcelain = git_text(library, "status", "--porcelain", "--untracked-files=all")
        expected = {" M sources/team/skills/keep/SKILL.md"}
        if not POINTS[point]:
            expected.add(" M sources/team/skills/pdf/SKILL.md")
        assert set(porcelain.splitlines()) == expected
        if point != "update-after-fetch":
            ref = "refs/librarian/backups/team/" + _backup_refs(library)[0]
            saved = git_text(library, "show", f"{ref}:sources/team/skills/pdf/SKILL.md")
            assert saved.endswith("forced local edit\n")
    state = library / ".git" / "librarian"
    assert not (state / "journal.json").exists()
    assert not any((state / "stage").iterdir()) if (state / "stage").exists() else True
    # and the library works on: the update completes (or is already complete)
    final = run_process("--library", str(library), "update", "--force", "--json")
    assert final.returncode == 0, final.stderr
    assert tree_snapshot(library) == after


def test_recovery_also_runs_at_the_start_of_the_next_changing_command(
    tmp_path: Path, capsys: Cap
) -> None:
    library, _ = _prepare(tmp_path, capsys)
    killed = run_process("--library", str(library), "update", "--force",
                         env={"LIBRARIAN_CRASH_AT": "after-cas"})
    assert killed.returncode == -signal.SIGKILL
    assert (library / ".git" / "librarian" / "journal.json").exists()
    result = run_process("--library", str(library), "update", "--json")
    assert result.returncode == 0, result.stderr
    assert not (library / ".git" / "librarian" / "journal.json").exists()
    assert (library / "sources" / "team" / "skills" / "new" / "SKILL.md").exists()
    assert not (library / "sources" / "team" / "skills" / "docx").exists()


#: the crash points of a merging update -> whether it is committed once recovered
MERGE_POINTS = {**POINTS, "update-after-merge": False}


def _prepare_merge(tmp_path: Path, capsys: Cap) -> tuple[Path, bytes]:
    from librarian.ops.create import init_library

    library = tmp_path / "lib"
    init_library(library, "crash-lib", GENERATED)
    up = Upstream(tmp_path / "up.git")
    body = "".join(f"Step {n}.\n" for n in range(1, 9))
    up.skill("skills/pdf", body=body).skill("skills/docx").commit("first")
    args = ("--library", str(library))
    assert run_main(capsys, *args, "source", "add", "team", up.url).code == 0
    assert run_main(capsys, *args, "update").code == 0
    skill = library / "sources" / "team" / "skills" / "pdf" / "SKILL.md"
    skill.write_text(skill.read_text().replace("Step 2.\n", "Step 2, my way.\n"))
    (skill.parent / "mine.md").write_text("my own file\n")
    up.skill("skills/pdf", body=body.replace("Step 7.\n", "Step 7, upstream's way.\n"))
    up.skill("skills/docx", body="Upstream two.\n").commit("second")
    return library, skill.read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("point", list(MERGE_POINTS))
def test_killed_merging_update_keeps_the_edit(tmp_path: Path, capsys: Cap, point: str) -> None:
    library, edited = _prepare_merge(tmp_path, capsys)
    reference = tmp_path / "reference"
    shutil.copytree(library, reference, symlinks=True)
    before_head, before = head(library), tree_snapshot(library)
    done = run_process("--library", str(reference), "update", "--json")
    assert done.returncode == 0, done.stderr
    after = tree_snapshot(reference)
    merged = (reference / "sources/team/skills/pdf/SKILL.md").read_text()
    assert "Step 2, my way." in merged and "Step 7, upstream's way." in merged

    killed = run_process("--library", str(library), "update",
                         env={"LIBRARIAN_CRASH_AT": point})
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr)
    assert run_process("--library", str(library), "recover").returncode == 0
    skill = library / "sources" / "team" / "skills" / "pdf" / "SKILL.md"
    if MERGE_POINTS[point]:
        assert head(library) != before_head and tree_snapshot(library) == after
        assert skill.read_text() == merged  # the merged edit
    else:
        assert head(library) == before_head and tree_snapshot(library) == before
        assert skill.read_bytes() == edited  # the original edit
    assert (skill.parent / "mine.md").read_text() == "my own file\n"
    if point != "update-after-fetch":
        # the original edit was saved before anything else changed
        (name,) = _backup_refs(library)
        saved = git_text(library, "show", f"refs/librarian/backups/team/{name}:"
                         "sources/team/skills/pdf/SKILL.md") if GIT else None
        assert saved is None or saved.encode() == edited
    if GIT is not None:
        porcelain = set(git_text(library, "status", "--porcelain",
                                 "--untracked-files=all").splitlines())
        assert porcelain == {" M sources/team/skills/pdf/SKILL.md",
                             "?? sources/team/skills/pdf/mine.md"}
        fsck = git(library, "fsck", "--strict", check=False)
        assert fsck.returncode == 0, fsck.stderr.decode()
    # and the library works on: the update completes (or is already complete)
    final = run_process("--library", str(library), "update", "--json")
    assert final.returncode == 0, final.stderr
    assert tree_snapshot(library) == after



def test_roll_forward_without_the_stage_rebuilds_the_merge(tmp_path: Path, capsys: Cap) -> None:
    """The journal names the merged tree: even with the stage lost, recovery writes the
    merged edit, never bare upstream."""
    library, _ = _prepare_merge(tmp_path, capsys)
    killed = run_process("--library", str(library), "update",
                         env={"LIBRARIAN_CRASH_AT": "after-cas"})
    assert killed.returncode == -signal.SIGKILL
    shutil.rmtree(library / ".git" / "librarian" / "stage")
    shutil.rmtree(library / "sources" / "team" / "skills" / "pdf")
    assert run_process("--library", str(library), "recover").returncode == 0
    text = (library / "sources" / "team" / "skills" / "pdf" / "SKILL.md").read_text()
    assert "Step 2, my way." in text and "Step 7, upstream's way." in text


@pytest.mark.parametrize("work", [{"1": "a" * 40}, {"0": "not-a-tree"}, {"x": "a" * 40},
                                  ["a" * 40]])
def test_a_forged_work_tree_in_the_journal_is_refused(tmp_path: Path, capsys: Cap,
                                                      work: object) -> None:
    """The journal's `work` (the merged tree of a slot) is checked like its other fields:
    a slot that is not one of the paths, or a value that is not a tree id, is exit 2."""
    library, edited = _prepare_merge(tmp_path, capsys)
    journal = {"tx": "0123456789ab", "branch": "refs/heads/main", "base": None,
               "new": "0" * 40, "paths": ["sources/team/skills/pdf"], "work": work}
    (library / ".git" / "librarian" / "journal.json").write_text(json.dumps(journal))
    before = tree_snapshot(library)
    result = run_process("--library", str(library), "recover")
    assert result.returncode == 2 and "journal.json" in result.stderr
    assert tree_snapshot(library) == before
    assert (library / "sources/team/skills/pdf/SKILL.md").read_bytes() == edited


@pytest.mark.parametrize("swapped", [1, 2])
def test_killed_in_the_middle_of_a_merging_swap_rolls_forward(
    tmp_path: Path, capsys: Cap, swapped: int
) -> None:
    """Killed between the renames of the swap (some items in place, some not): recovery
    finishes it, the merged edit in place, exactly as a completed update."""
    library, _ = _prepare_merge(tmp_path, capsys)
    reference = tmp_path / "reference"
    shutil.copytree(library, reference, symlinks=True)
    assert run_process("--library", str(reference), "update").returncode == 0
    killed = run_process("--library", str(library), "update",
                         env={"LIBRARIAN_CRASH_AT": "after-cas"})
    assert killed.returncode == -signal.SIGKILL
    state = library / ".git" / "librarian"
    journal = json.loads((state / "journal.json").read_text())
    stage, trash = state / "stage" / journal["tx"], state / "trash" / journal["tx"]
    trash.mkdir(parents=True)
    # what swap_in had done when killed: the first paths renamed, in its order
    for number, path in list(enumerate(journal["paths"]))[:swapped]:
        target = library / path
        if target.exists():
            target.rename(trash / str(number))
        if (stage / str(number)).exists():
            (stage / str(number)).rename(target)
    assert run_process("--library", str(library), "recover").returncode == 0
    assert tree_snapshot(library) == tree_snapshot(reference)
    if GIT is not None:
        assert set(git_text(library, "status", "--porcelain", "--untracked-files=all")
                   .splitlines()) == {" M sources/team/skills/pdf/SKILL.md",
                                      "?? sources/team/skills/pdf/mine.md"}
