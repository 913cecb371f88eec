"""A library in a folder of a project's repository (``librarian init .agents`` inside a git
work tree), committed with the project: every changing command commits only the library's
folder, built from HEAD and never from the index, so what the user staged elsewhere stays
staged and uncommitted, the rest of ``git status`` is unchanged and ``git log -- .agents``
lists exactly the retention events. A kill at every write step leaves the library exactly
before or after with the project's index intact; a clone of the project carries the skills.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.helpers import GIT, git, git_text, make_recipe, make_skill, run_main, tree_snapshot
from support.sources_helpers import Upstream

pytestmark = pytest.mark.skipif(GIT is None, reason="needs the git binary as a judge")

KILLER = Path(__file__).parent.parent / "support" / "killer.py"
FOLDER = ".agents"
# Read at import: the autouse fixture removes LIBRARIAN_* variables before each test.
EVERY = os.environ.get("LIBRARIAN_KILL_EVERY") == "1"


def make_project(base: Path) -> Path:
    """A project with its own history, a second branch, staged and unstaged changes outside
    the library (a new file, an edit, a deletion) and untracked files."""
    project = base / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('hello')\n")
    (project / "README.md").write_text("# Project\n")
    (project / "old.txt").write_text("to be deleted\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "first")
    git(project, "checkout", "-q", "-b", "feature")
    (project / "feature.txt").write_text("on the feature branch\n")
    git(project, "add", "feature.txt")
    git(project, "commit", "-q", "-m", "a feature")
    git(project, "checkout", "-q", "main")
    (project / "src" / "app.py").write_text("print('hello, world')\n")
    git(project, "commit", "-q", "-am", "second")
    return project


def dirty(project: Path) -> None:
    (project / "staged.txt").write_text("staged, never committed by librarian\n")
    (project / "README.md").write_text("# Project\n\nStaged edit.\n")
    git(project, "add", "staged.txt", "README.md")
    git(project, "rm", "-q", "--cached", "old.txt")
    (project / "src" / "app.py").write_text("print('unstaged edit')\n")
    (project / "notes.txt").write_text("untracked\n")
    (project / "scratch").mkdir()
    (project / "scratch" / "x.log").write_text("untracked too\n")


def outside_status(project: Path) -> list[str]:
    status = git_text(project, "status", "--porcelain", "--untracked-files=all")
    return [line for line in status.splitlines() if not line[3:].startswith(FOLDER + "/")]


def staged(project: Path) -> str:
    return git_text(project, "diff", "--cached", "--name-status")


def changed_paths(project: Path, rev: str = "HEAD") -> list[str]:
    return git_text(project, "show", "--format=", "--name-only", rev).split()


@dataclass(frozen=True)
class Project:
    root: Path
    library: Path
    src: Path
    team: Upstream


@pytest.fixture
def project(tmp_path: Path, capsys: pytest.CaptureFixture[str],
            monkeypatch: pytest.MonkeyPatch) -> Project:
    root = make_project(tmp_path)
    dirty(root)
    monkeypatch.chdir(root)
    result = run_main(capsys, "init", FOLDER)
    assert result.code == 0, result.err
    assert "no repository of its own" in result.out
    src = tmp_path / "src"
    team = Upstream(tmp_path / "team.git")
    team.skill("skills/pdf").recipe("recipes/tally").commit("first")
    return Project(root, root / FOLDER, src, team)


def lib(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """A command run from the project's top: the library is found as ``.agents``."""
    result = run_main(capsys, *args)
    assert result.code == 0, (args, result.err)
    return result.out


def test_init_makes_a_folder_of_the_project_not_a_nested_repository(
        project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    assert not (project.library / ".git").exists()
    assert all(path.startswith(FOLDER + "/") for path in changed_paths(project.root))
    assert git_text(project.root, "ls-files", "-s", FOLDER).count("160000") == 0
    result = run_main(capsys, "init", "--json", "other")
    assert result.code == 0
    assert '"own_repository": false' in result.out and '"prefix": "other"' in result.out
    own = run_main(capsys, "init", "--own-repo", "nested")
    assert own.code == 0 and (project.root / "nested" / ".git").is_dir()
    assert "no repository of its own" not in own.out


def test_every_changing_command_commits_only_the_librarys_folder(
        project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    root = project.root
    staged_before, outside_before = staged(root), outside_status(root)
    feature = git_text(root, "rev-parse", "feature")
    make_skill(project.src, "pdfkit")
    make_skill(project.src, "notes")
    make_skill(project.src / "v2", "pdfkit", body="Revised.\n")
    make_recipe(project.src, "count")
    make_skill(project.src, "idea")
    commands = [
        ["retain", str(project.src / "pdfkit")],
        ["retain", "--draft", str(project.src / "notes")],
        ["promote", "notes"],
        ["revise", "pdfkit", str(project.src / "v2" / "pdfkit")],
        ["retain", str(project.src / "count")],
        ["expose", "count"],
        ["withdraw", "count"],
        ["retire", "notes"],
        ["restore", "notes"],
        ["hide", "pdfkit"],
        ["unhide", "pdfkit"],
        ["resident", "pdfkit"],
        ["retain", "--draft", str(project.src / "idea")],
        ["defer", "idea", "--reason", "later"],
        ["discard", "idea", "--reason", "not needed"],
        ["source", "add", "team", project.team.url],
        ["update", "team"],
        ["source", "remove", "team"],
    ]
    for args in commands:
        before = git_text(root, "rev-parse", "HEAD").strip()
        lib(capsys, *args)
        assert git_text(root, "rev-parse", "HEAD^").strip() == before, args
        paths = changed_paths(root)
        # a decision (defer) is an empty commit, as in a library of its own
        assert (paths or args[0] == "defer") and all(
            p.startswith(FOLDER + "/") for p in paths), (args, paths)
        assert staged(root) == staged_before, args
        assert outside_status(root) == outside_before, args
        # the library's own paths are clean: the index was spliced under the folder only
        assert git_text(root, "status", "--porcelain", "--", FOLDER) == "", args
    # the staged changes are still staged and were never committed
    assert git_text(root, "show", "HEAD:README.md") == "# Project\n"
    assert "staged.txt" not in git_text(root, "ls-tree", "-r", "--name-only", "HEAD")
    assert (root / "staged.txt").exists() and (root / "notes.txt").exists()
    assert git_text(root, "rev-parse", "feature") == feature
    # `git log -- .agents` is exactly the retention events, init first (all but the
    # decision that changed no file); `librarian log` has that one too
    touched = git_text(root, "log", "--format=%s", "--", FOLDER).splitlines()
    assert len(touched) == len(commands) and touched[-1].startswith("init library")
    events = git_text(root, "log", "--format=%(trailers:key=Librarian-Event,valueonly)",
                      "--", FOLDER).split()
    assert len(events) == len(commands) and "defer" not in events
    logged = json.loads(lib(capsys, "log", "--json"))["events"]
    assert len(logged) == len(commands) + 1
    assert [e["event"] for e in logged].count("defer") == 1
    pdf_log = lib(capsys, "log", "pdfkit")
    assert "revise" in pdf_log and "retain" in pdf_log and "promote" not in pdf_log
    assert "clean" in lib(capsys, "status")
    fsck = git(root, "fsck", "--strict", "--no-dangling", check=False)
    assert fsck.returncode == 0, fsck.stderr


def test_found_from_the_top_below_it_and_inside_it(
        project: Project, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from librarian.library import find_library

    assert find_library(cwd=project.root).root == project.library
    inner = project.library / "skills"
    found = find_library(cwd=inner)
    assert (found.root, found.repo_root, found.prefix) == (
        project.library, project.root, FOLDER)
    assert find_library(project.library).prefix == FOLDER
    # src/ is in the project: the nearest library is the one at the project's top
    assert find_library(cwd=project.root / "src").root == project.library
    monkeypatch.chdir(inner)
    assert "clean" in lib(capsys, "status")


def test_local_edits_and_diff_name_library_paths(
        project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    lib(capsys, "retain", str(make_skill(project.src, "pdfkit")))
    manifest = project.library / "skills" / "pdfkit" / "SKILL.md"
    manifest.write_bytes(manifest.read_bytes() + b"local edit\n")
    assert "modified" in lib(capsys, "status")
    diff = lib(capsys, "diff")
    assert "a/skills/pdfkit/SKILL.md" in diff and FOLDER not in diff
    (project.library / "stray.txt").write_text("x\n")
    assert "stray.txt" in lib(capsys, "status")


def test_a_merge_in_progress_is_refused_uncommitted_changes_are_not(
        project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    root = project.root
    git(root, "stash", "-q", "--include-untracked")
    (root / "feature.txt").write_text("conflict on main\n")
    git(root, "add", "feature.txt")
    git(root, "commit", "-q", "-m", "conflicting")
    assert git(root, "merge", "-q", "feature", check=False).returncode != 0
    head = git_text(root, "rev-parse", "HEAD")
    result = run_main(capsys, "retain", str(make_skill(project.src, "pdfkit")))
    assert result.code == 2 and "in the middle of a merge" in result.err
    assert git_text(root, "rev-parse", "HEAD") == head
    git(root, "merge", "--abort")
    lib(capsys, "retain", str(project.src / "pdfkit"))


def test_the_staged_hook_judges_only_the_librarys_paths(
        project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    (project.root / "bad.md").write_text("not a skill, and not the library's\n")
    git(project.root, "add", "bad.md")
    report = lib(capsys, "check", "--staged")
    assert "bad.md" not in report


def test_the_installed_hook_judges_the_library_folder_of_a_project_commit(
        project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    root = project.root
    lib(capsys, "hooks", "install")
    hook = (root / ".git" / "hooks" / "pre-commit").read_text()
    assert '--library "$top"/.agents' in hook
    git(root, "commit", "-q", "-m", "the project's own change")  # the staged changes
    assert git_text(root, "status", "--porcelain", "--", "README.md") == ""
    bad = project.library / "skills" / "broken" / "SKILL.md"
    bad.parent.mkdir()
    bad.write_text("no front matter\n")
    git(root, "add", str(bad))
    refused = git(root, "commit", "-q", "-m", "a broken skill", check=False)
    assert refused.returncode != 0
    assert "skills/broken" in refused.stderr.decode() + refused.stdout.decode()


def test_a_clone_of_the_project_carries_the_skills(
        project: Project, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    lib(capsys, "retain", str(make_skill(project.src, "pdfkit")))
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(project.root), str(clone))
    assert (clone / FOLDER / "skills" / "pdfkit" / "SKILL.md").is_file()
    result = run_main(capsys, "--library", str(clone / FOLDER), "status")
    assert result.code == 0 and "clean" in result.out, result.out + result.err
    assert git_text(clone, "status", "--porcelain") == ""


# -- a kill at every write step ---------------------------------------------------------

KILLED = {
    "retain": lambda src: ["retain", str(src / "next")],
    "retire": lambda src: ["retire", "old"],
    "update": lambda src: ["update", "team"],
}


@pytest.fixture(scope="module")
def killed_world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("project-kill")
    root = make_project(base)
    src = base / "src"
    team = Upstream(base / "team.git")
    team.skill("skills/pdf").skill("skills/docx").commit("first")
    _run(root, "init", FOLDER)
    for args in (["retain", str(make_skill(src, "old"))], ["source", "add", "team", team.url],
                 ["update", "team"]):
        assert _run(root, *args).returncode == 0
    team.skill("skills/pdf", body="Two.\n").remove("skills/docx").skill("skills/new")
    team.commit("second")
    make_skill(src, "next")
    dirty(root)
    return root, src


def _run(cwd: Path, *args: str, kill_at: int | None = None
         ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "LIBRARIAN_"))}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    command = [sys.executable, "-m", "librarian"]
    if kill_at is not None:
        command = [sys.executable, str(KILLER)]
        env["KILL_AT"] = str(kill_at)
    return subprocess.run([*command, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def _outcome(root: Path) -> tuple[str, str, object, str, str]:
    """HEAD, its tree, the library's folder, git status and the staged changes."""
    head, tree = git_text(root, "rev-parse", "HEAD", "HEAD^{tree}").split()
    return (head, tree, tree_snapshot(root / FOLDER),
            git_text(root, "status", "--porcelain", "--untracked-files=all"), staged(root))


@pytest.mark.parametrize("name", list(KILLED))
def test_killed_at_every_write_step_leaves_before_or_after_and_the_index(
        name: str, killed_world: tuple[Path, Path], tmp_path: Path) -> None:
    template, src = killed_world
    args = KILLED[name](src)
    before = _outcome(template)
    reference = tmp_path / "reference"
    shutil.copytree(template, reference, symlinks=True)
    counted = _run(reference, *args, kill_at=0)
    assert counted.returncode == 0, counted.stderr
    steps = int(counted.stderr.rsplit("write-steps: ", 1)[1])
    after = _outcome(reference)
    assert after[1] != before[1] and after[4] == before[4]
    every = EVERY or steps <= 10
    ks = range(1, steps + 1) if every else sorted(
        {min(steps, 1 + round(i * (steps - 1) / 9)) for i in range(10)})
    failures = []
    for k in ks:
        trial = tmp_path / f"k{k}"
        shutil.copytree(template, trial, symlinks=True)
        killed = _run(trial, *args, kill_at=k)
        recovered = _run(trial, "recover")
        now = _outcome(trial)
        problems = []
        if killed.returncode != -9:
            problems.append(f"not killed ({killed.returncode})")
        if recovered.returncode != 0:
            problems.append(f"recover: {recovered.stderr.strip()}")
        is_before = now == before
        is_after = now[1:] == after[1:] and git_text(
            trial, "rev-parse", "HEAD^").strip() == before[0]
        if not (is_before or is_after):
            problems.append("neither before nor after (library, status or index)")
        fsck = git(trial, "fsck", "--strict", "--no-dangling", check=False)
        if fsck.returncode != 0:
            problems.append("fsck: " + fsck.stderr.decode()[:200])
        if list(trial.glob(".git/*.lock")):
            problems.append(f"left {list(trial.glob('.git/*.lock'))}")
        if problems:
            failures.append(f"k={k}/{steps}: " + "; ".join(problems))
        shutil.rmtree(trial, ignore_errors=True)
    assert not failures, "\n".join(failures)


def test_update_merges_a_local_edit_and_the_attributes_stay_in_the_folder(
        project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    root, team = project.root, project.team
    steps = "".join(f"Step {n}.\n" for n in range(1, 11))
    team.skill("skills/pdf", body=steps).commit("steps")
    lib(capsys, "source", "add", "team", team.url)
    lib(capsys, "update")
    manifest = project.library / "sources" / "team" / "skills" / "pdf" / "SKILL.md"
    manifest.write_text(manifest.read_text().replace("Step 2.", "Step 2, my way."))
    team.skill("skills/pdf", body=steps.replace("Step 9.", "Step 9, revised.")).commit("nine")
    staged_before = staged(root)
    lib(capsys, "update")
    assert all(p.startswith(FOLDER + "/") for p in changed_paths(root))
    text = manifest.read_text()
    assert "Step 2, my way." in text and "Step 9, revised." in text
    committed = git_text(root, "show", f"HEAD:{FOLDER}/sources/team/skills/pdf/SKILL.md")
    assert "Step 9, revised." in committed and "my way" not in committed
    assert git_text(root, "status", "--porcelain", "--", FOLDER) == (
        f" M {FOLDER}/sources/team/skills/pdf/SKILL.md\n")
    assert staged(root) == staged_before
    # librarian's `* -text` rule is the library folder's own: the project's files keep theirs
    inside = git_text(root, "check-attr", "text", "--", f"{FOLDER}/library.yaml")
    outside = git_text(root, "check-attr", "text", "--", "README.md")
    assert inside.strip().endswith("unset") and outside.strip().endswith("unspecified")


def test_a_project_commit_made_meanwhile_is_a_moved_branch(
        project: Project, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The compare-and-swap is on the project's branch: the user's own commit, landing
    while a librarian command runs, makes it exit 3 with nothing changed; the staged
    changes the user committed are the user's commit's, the rest still staged."""
    from librarian.txn import transaction

    root = project.root
    real_crash_point = transaction.crash_point

    def commit_meanwhile(name: str) -> None:
        if name == "after-objects":
            git(root, "commit", "-q", "-m", "the user's commit", "--", "staged.txt")
        real_crash_point(name)

    monkeypatch.setattr(transaction, "crash_point", commit_meanwhile)
    before = tree_snapshot(project.library)
    result = run_main(capsys, "retain", str(make_skill(project.src, "racing")))
    assert result.code == 3 and "moved" in result.err
    assert git_text(root, "log", "-1", "--format=%s").strip() == "the user's commit"
    assert tree_snapshot(project.library) == before
    assert "README.md" in staged(root) and "staged.txt" not in staged(root)
    assert not list((root / ".git").glob("*.lock"))
    monkeypatch.setattr(transaction, "crash_point", real_crash_point)
    lib(capsys, "retain", str(project.src / "racing"))
    assert git_text(root, "log", "-2", "--format=%s").splitlines()[1] == "the user's commit"


def test_a_linked_state_folder_is_refused(project: Project, capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    state = project.root / ".git" / "librarian" / "in" / FOLDER
    elsewhere = tmp_path / "elsewhere"
    shutil.move(str(state), str(elsewhere))
    state.symlink_to(elsewhere, target_is_directory=True)
    head = git_text(project.root, "rev-parse", "HEAD")
    result = run_main(capsys, "retain", str(make_skill(project.src, "linked")))
    assert result.code == 2 and "symbolic link" in result.err, result.err
    assert git_text(project.root, "rev-parse", "HEAD") == head


def test_two_libraries_in_one_project_keep_their_own_log_and_state(
        project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    lib(capsys, "init", "tools/lib")
    other = project.root / "tools" / "lib"
    lib(capsys, "--library", str(other), "retain", str(make_skill(project.src, "elsewhere")))
    lib(capsys, "retain", str(make_skill(project.src, "here")))
    mine = [e["subject"] for e in json.loads(lib(capsys, "log", "--json"))["events"]]
    theirs = [e["subject"] for e in json.loads(
        lib(capsys, "--library", str(other), "log", "--json"))["events"]]
    assert mine == ["retain skill here", "init library agents"]
    assert theirs == ["retain skill elsewhere", "init library lib"]
    state = project.root / ".git" / "librarian" / "in"
    assert sorted(p.name for p in state.iterdir()) == [FOLDER, "tools%2Flib"]
    assert "clean" in lib(capsys, "--library", str(other), "status")
