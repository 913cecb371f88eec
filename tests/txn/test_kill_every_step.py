"""SIGKILL at every write step: for each changing command, count its write steps
(tests/support/killer.py: every open for writing, rename, unlink, mkdir… seen by an audit
hook), then for each k kill a fresh copy of the same library just before its k-th step, run
``recover``, and require: exactly the library before or exactly the library after, git
fsck --strict clean, git status as before or after (local edits kept), no librarian file
left behind, and the next command succeeding.

Every k of every command runs when LIBRARIAN_KILL_EVERY=1 (869 kills at the last count,
2 to 10 minutes on two cores, as busy as they are); by default eight k spread over each
command's steps, so the suite stays quick.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.helpers import (
    GIT,
    PROJECT,
    git,
    git_env,
    git_text,
    make_recipe,
    make_skill,
    state_listing,
)
from support.helpers import tree_snapshot as snapshot
from support.sources_helpers import Upstream

from librarian.agents.claude_manifests import GENERATED
from librarian.cli.main import main
from librarian.gate.exposure import expose
from librarian.git.quarantine import PREFIX as QUARANTINE
from librarian.library.layout import Library
from librarian.ops.create import init_library
from librarian.ops.retention import retain
from librarian.ops.revisions import retire
from librarian.sources.subscriptions import add_source
from librarian.sources.update import update

KILLER = PROJECT / "tests" / "support" / "killer.py"
# Read at import: the autouse fixture removes LIBRARIAN_* variables before each test.
EVERY = os.environ.get("LIBRARIAN_KILL_EVERY") == "1"
REPORT = os.environ.get("LIBRARIAN_KILL_REPORT")
pytestmark = [
    pytest.mark.crash,
    pytest.mark.skipif(GIT is None, reason="needs the git binary as a judge"),
]


@dataclass(frozen=True)
class World:
    template: Path  # the library every trial starts from (copied)
    src: Path  # sources outside the library
    team: Upstream
    forced: Upstream


def _build(base: Path) -> World:
    lib = base / "template"
    init_library(lib, "killed", GENERATED)
    library = Library(lib, GENERATED)
    src = base / "src"
    for name in ("other", "old", "gone", "reviseme"):
        retain(library, make_skill(src / "first", name))
    retain(library, make_skill(src / "first", "drafty"), draft=True)
    retain(library, make_recipe(src / "first", "count"))
    retain(library, make_recipe(src / "first", "tooled"))
    expose(library, "tooled")
    retire(library, "gone")
    team = Upstream(base / "team.git")
    team.skill("skills/pdf").skill("skills/docx").skill("skills/kit")
    team.put("skills/kit/scripts/old.sh", b"#!/bin/sh\necho old\n", 0o100755)
    team.put("skills/kit/references/keep.md", b"Kept.\n").put("skills/kit/notes.md", b"N.\n")
    team.put("skills/kit/extra", b"a file, then a directory\n").commit("first")
    forced = Upstream(base / "forced.git")
    forced.skill("skills/edited").commit("first")
    many = Upstream(base / "many.git")
    for number in range(6):
        many.skill(f"skills/m{number}").put(f"skills/m{number}/notes/a.md", b"A.\n")
    many.commit("first")
    add_source(library, "team", team.url)
    add_source(library, "forced", forced.url)
    update(library)
    add_source(library, "many", many.url)  # installed only by the command under test
    team.skill("skills/pdf", body="Two.\n").remove("skills/docx").skill("skills/new")
    # kit changes in place in every way: an edit, a directory gone, one new, a mode, a
    # file become a directory (only those entries are staged and swapped).
    team.skill("skills/kit", body="Two.\n").remove("skills/kit/scripts")
    team.put("skills/kit/assets/new.txt", b"New.\n").put("skills/kit/notes.md", b"N.\n", 0o100755)
    team.remove("skills/kit/extra").put("skills/kit/extra/inner.md", b"Inner.\n")
    team.commit("second")
    forced.skill("skills/edited", body="Upstream two.\n").commit("second")
    # Local edits that every outcome must keep (and one that --force saves and overwrites).
    other = lib / "skills" / "other" / "SKILL.md"
    other.write_bytes(other.read_bytes() + b"a local edit\n")
    edited = lib / "sources" / "forced" / "skills" / "edited" / "SKILL.md"
    edited.write_bytes(edited.read_bytes() + b"edited locally\n")
    make_skill(src, "new")
    make_skill(src / "v2", "reviseme", body="Revised.\n")
    make_skill(src, "next")
    return World(lib, src, team, forced)


COMMANDS: dict[str, Callable[[World], list[str]]] = {
    "retain": lambda w: ["retain", str(w.src / "new")],
    "promote": lambda w: ["promote", "drafty"],
    "revise": lambda w: ["revise", "reviseme", str(w.src / "v2" / "reviseme")],
    "retire": lambda w: ["retire", "old"],
    "restore": lambda w: ["restore", "gone"],
    "expose": lambda w: ["expose", "count"],
    "withdraw": lambda w: ["withdraw", "tooled"],
    "hide": lambda w: ["hide", "reviseme"],
    "source-add": lambda w: ["source", "add", "extra", w.team.url],
    "update": lambda w: ["update", "team"],
    "update-force": lambda w: ["update", "forced", "--force"],
    # A first install of a source of several items.
    "install-many": lambda w: ["update", "many"],
}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return _build(tmp_path_factory.mktemp("kill-world"))


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "LIBRARIAN_"))}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    return env


def _librarian(library: Path, *args: str, kill_at: int | None = None
               ) -> subprocess.CompletedProcess[str]:
    env = _child_env()
    command = [sys.executable, str(KILLER)] if kill_at is not None else [
        sys.executable, "-m", "librarian"]
    if kill_at is not None:
        env["KILL_AT"] = str(kill_at)
    return subprocess.run([*command, "--library", str(library), *args], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


@dataclass(frozen=True)
class Outcome:
    head_tree: str
    parent: str | None
    tree: dict[str, object]
    status: str


def _outcome(library: Path) -> Outcome:
    head_tree, parent = git_text(library, "rev-parse", "HEAD^{tree}", "HEAD^").split()
    status = git_text(library, "status", "--porcelain", "--untracked-files=all")
    return Outcome(head_tree, parent, snapshot(library), status)


def _in_process(library: Path, *args: str) -> tuple[int, str]:
    """The command line in this process (recover and the next command need no killer)."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = main(["--library", str(library), *args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, err.getvalue().strip()


def _leftovers(library: Path, allowed: set[str]) -> list[str]:
    git_dir = library / ".git"
    found = [f"librarian/{name}" for name in state_listing(library) if name not in allowed]
    found += [str(p.relative_to(git_dir)) for p in git_dir.rglob("*.lock")
              if "librarian" not in p.parts]
    found += [str(p.relative_to(git_dir)) for p in (git_dir / "objects").rglob("tmp*")]
    found += [str(p.relative_to(git_dir)) for p in (git_dir / "objects").glob(
        f"{QUARANTINE}*")]  # a fetch's quarantine (git/quarantine.py)
    found += [p.name for p in git_dir.glob(".*.tmp")]  # a fetch's .shallow.*.tmp
    packs = git_dir / "objects" / "pack"
    found += [str(p.relative_to(git_dir)) for p in packs.glob("*.pack")
              if not p.with_suffix(".idx").exists()]  # a pack moved in without its index
    return found


def _steps(count: int) -> list[int]:
    """Every k with LIBRARIAN_KILL_EVERY=1; else eight spread over the run, the last too."""
    every = list(range(1, count + 1))
    if EVERY or count <= 8:
        return every
    stride = count / 7
    return sorted({every[min(count - 1, round(i * stride))] for i in range(8)})


@pytest.mark.slow
@pytest.mark.parametrize("name", list(COMMANDS))
def test_killed_at_every_write_step_recovers_to_before_or_after(
        name: str, world: World, tmp_path: Path) -> None:
    args = COMMANDS[name](world)
    before_head = git_text(world.template, "rev-parse", "HEAD").strip()
    before = _outcome(world.template)
    allowed = set(state_listing(world.template)) | {"lock"}

    reference = tmp_path / "reference"
    shutil.copytree(world.template, reference, symlinks=True)
    counted = _librarian(reference, *args, kill_at=0)
    assert counted.returncode == 0, counted.stderr
    steps = int(counted.stderr.strip().rsplit("write-steps: ", 1)[1])
    after = _outcome(reference)
    allowed |= set(state_listing(reference))
    assert after.parent == before_head

    failures = []
    for k in _steps(steps):
        trial = tmp_path / f"k{k}"
        shutil.copytree(world.template, trial, symlinks=True)
        killed = _librarian(trial, *args, kill_at=k)
        recovered, recover_err = _in_process(trial, "recover")
        now = _outcome(trial)
        problems = []
        if killed.returncode != -9:
            problems.append(f"not killed ({killed.returncode}: {killed.stderr.strip()})")
        if recovered != 0:
            problems.append(f"recover exit {recovered}: {recover_err}")
        is_before = (now.head_tree, now.tree, now.status) == (
            before.head_tree, before.tree, before.status)
        is_after = (now.head_tree, now.parent, now.tree, now.status) == (
            after.head_tree, after.parent, after.tree, after.status)
        if not (is_before or is_after):
            problems.append("neither before nor after")
        fsck = git(trial, "fsck", "--strict", "--no-dangling", check=False)
        if fsck.returncode != 0:
            problems.append("fsck: " + fsck.stderr.decode().strip()[:200])
        left = _leftovers(trial, allowed)
        if left:
            problems.append(f"left {left[:3]}")
        following, following_err = _in_process(trial, "retain", str(world.src / "next"))
        if following != 0:
            problems.append(f"next command exit {following}: {following_err}")
        if problems:
            failures.append(f"k={k}/{steps}: " + "; ".join(problems))
        shutil.rmtree(trial, ignore_errors=True)
    if REPORT:  # one line per command: name, write steps, kills run
        with Path(REPORT).open("a") as handle:
            handle.write(f"{name} {steps} {len(_steps(steps))}\n")
    assert not failures, "\n".join(failures)


def test_the_killed_commands_fsync_for_real() -> None:
    """The crash marker keeps LIBRARIAN_TEST_FSYNC off these tests: the killed commands
    make their writes durable as a user's would."""
    assert "LIBRARIAN_TEST_FSYNC" not in os.environ
    probe = subprocess.run(
        [sys.executable, "-c",
         "from librarian.core.fsutil import fsync_enabled; print(fsync_enabled())"],
        env={**_child_env(), **os.environ}, capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "True"


def test_the_killer_counts_and_kills(world: World, tmp_path: Path) -> None:
    trial = tmp_path / "lib"
    shutil.copytree(world.template, trial, symlinks=True)
    assert _librarian(trial, "status", kill_at=0).returncode in (0, 3)
    killed = _librarian(trial, "retain", str(world.src / "new"), kill_at=1)
    assert killed.returncode == -9
    assert git_env()  # the judge's environment is the helpers' one
