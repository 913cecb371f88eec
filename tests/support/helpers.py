"""Shared helpers for the foundation tests: source-tree factories, snapshots, git access.

Imported as ``support.helpers`` (pyproject's pytest ``pythonpath`` puts tests/ on sys.path).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from librarian.agents.claude_manifests import GENERATED

GIT = shutil.which("git")
requires_git = pytest.mark.skipif(GIT is None, reason="the git binary is not installed")

#: Where the project lives (the hooks and the template are found from here).
PROJECT = Path(__file__).resolve().parents[2]
#: The venv's bin directory: ``librarian`` is on PATH for the git hooks from here.
VENV_BIN = Path(sys.executable).parent

DEFAULT_BODY = "# Instructions\n\nDo the thing, then check it.\n"


# -- source-tree factories ------------------------------------------------------------


def write(path: Path, data: bytes | str = b"x\n", mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    path.chmod(mode)
    return path


def skill_md(name: str, description: str = "Does a thing.", body: str = DEFAULT_BODY) -> bytes:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}".encode()


def make_skill(
    base: Path,
    name: str,
    body: str = DEFAULT_BODY,
    extra_files: dict[str, bytes | str | tuple[bytes | str, int]] | None = None,
    *,
    description: str = "Does a thing.",
    dirname: str | None = None,
    skill_md_bytes: bytes | None = None,
) -> Path:
    """A skill source directory ``base/<dirname or name>``; ``extra_files`` maps a relative
    path to its data, or to (data, mode) for e.g. executables."""
    root = base / (dirname or name)
    root.mkdir(parents=True, exist_ok=True)
    data = skill_md_bytes if skill_md_bytes is not None else skill_md(name, description, body)
    write(root / "SKILL.md", data)
    _extra(root, extra_files)
    return root


def recipe_yaml(name: str, entrypoint: str = "run.sh", extra: str = "") -> bytes:
    return (
        f"name: {name}\ndescription: Counts words.\nexecution: sync\nenvironment: shell\n"
        f"entrypoint: {entrypoint}\ninputs:\n  path: {{type: path, required: true}}\n"
        f"result: A number on stdout.\neffects: {{filesystem: read, network: false}}\n"
        f"timeout: 60\n{extra}"
    ).encode()


def make_recipe(
    base: Path,
    name: str,
    *,
    entrypoint: str = "run.sh",
    with_entrypoint: bool = True,
    extra_yaml: str = "",
    extra_files: dict[str, bytes | str | tuple[bytes | str, int]] | None = None,
    dirname: str | None = None,
) -> Path:
    root = base / (dirname or name)
    root.mkdir(parents=True, exist_ok=True)
    write(root / "recipe.yaml", recipe_yaml(name, entrypoint, extra_yaml))
    if with_entrypoint:
        write(root / entrypoint, b"#!/bin/sh\nwc -w < \"$LIBRARIAN_INPUT_PATH\"\n", 0o755)
    _extra(root, extra_files)
    return root


def _extra(root: Path, extra_files: dict[str, Any] | None) -> None:
    for rel, spec in (extra_files or {}).items():
        data, mode = spec if isinstance(spec, tuple) else (spec, 0o644)
        write(root / rel, data, mode)


# -- snapshots ------------------------------------------------------------------------


def tree_snapshot(root: Path, *, skip_git: bool = True) -> dict[str, Any]:
    """Every entry below ``root`` (not following links): dirs, files with their bytes and
    executable bit, links with their target, special files by type."""
    out: dict[str, Any] = {}

    def visit(directory: Path, prefix: str) -> None:
        with os.scandir(directory) as entries:
            for entry in entries:
                rel = prefix + entry.name
                if skip_git and rel == ".git":
                    continue
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    out[rel + "/"] = "dir"
                    visit(Path(entry.path), rel + "/")
                elif stat.S_ISREG(st.st_mode):
                    out[rel] = ("file", bool(st.st_mode & stat.S_IXUSR),
                                Path(entry.path).read_bytes())
                elif stat.S_ISLNK(st.st_mode):
                    out[rel] = ("link", str(Path(entry.path).readlink()))
                else:
                    out[rel] = ("special", stat.S_IFMT(st.st_mode))

    if root.exists():
        visit(root, "")
    return out


def state_listing(library: Path) -> list[str]:
    """Names under ``.git/librarian`` (what a failed command must not leave behind)."""
    state = library / ".git" / "librarian"
    if not state.exists():
        return []
    return sorted(
        p.relative_to(state).as_posix() + ("/" if p.is_dir() else "") for p in state.rglob("*")
    )


def head(library: Path) -> str | None:
    """The commit HEAD names, read with dulwich (no git binary needed)."""
    from dulwich.repo import Repo

    repo = Repo(str(library))
    try:
        return repo.refs[b"HEAD"].decode()
    except KeyError:
        return None
    finally:
        repo.close()


def commit_count(library: Path) -> int:
    from dulwich.repo import Repo

    repo = Repo(str(library))
    try:
        return sum(1 for _ in repo.get_walker())
    finally:
        repo.close()


@dataclass(frozen=True)
class LibraryState:
    head: str | None
    tree: dict[str, Any]
    state: list[str]


def library_state(library: Path) -> LibraryState:
    return LibraryState(head(library), tree_snapshot(library), state_listing(library))


# -- the git binary -------------------------------------------------------------------


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Test Author",
        GIT_AUTHOR_EMAIL="author@example.org",
        GIT_COMMITTER_NAME="Test Author",
        GIT_COMMITTER_EMAIL="author@example.org",
    )
    env.update(extra or {})
    return env


def git(cwd: Path, *args: str, check: bool = True, input: bytes | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    if GIT is None:
        pytest.skip("the git binary is not installed")
    result = subprocess.run(
        [GIT, *args], cwd=cwd, input=input, capture_output=True, env=git_env(env), check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"git {' '.join(args)} failed ({result.returncode}):\n"
            f"{result.stdout.decode(errors='replace')}{result.stderr.decode(errors='replace')}"
        )
    return result


def git_text(cwd: Path, *args: str, **kwargs: Any) -> str:
    return git(cwd, *args, **kwargs).stdout.decode()


def assert_git_consistent(library: Path) -> None:
    """`git diff-files` and `git status --porcelain` are empty and `git fsck --strict` passes
    (when git exists)."""
    if GIT is None:
        return
    # First without refreshing the index: its stat data must match the work tree exactly.
    stale = git_text(library, "diff-files", "--name-status")
    assert stale == "", f"the git index does not match the work tree:\n{stale}"
    porcelain = git_text(library, "status", "--porcelain", "--untracked-files=all")
    assert porcelain == "", f"git status is not clean:\n{porcelain}"
    fsck = git(library, "fsck", "--strict", "--no-dangling", check=False)
    assert fsck.returncode == 0, fsck.stderr.decode() + fsck.stdout.decode()


def trailers(library: Path, rev: str = "HEAD") -> list[tuple[str, str]]:
    """The trailers of ``rev`` as `git interpret-trailers --parse` reads them."""
    message = git(library, "log", "-1", "--format=%B", rev).stdout
    parsed = git_text(library, "interpret-trailers", "--parse", input=message)
    pairs = []
    for line in parsed.splitlines():
        key, _, value = line.partition(": ")
        pairs.append((key, value))
    return pairs


# -- the command line -----------------------------------------------------------------


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)

    def error_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.startswith("librarian: error:")]


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> CliResult:
    """``librarian.cli.main.main(args)`` in process: (exit code, stdout, stderr)."""
    from librarian.cli.main import main

    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return CliResult(int(code), captured.out, captured.err)


def run_process(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
                timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``python -m librarian ARGS`` in a real process."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "librarian", *args],
        cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout, check=False,
    )


def assert_one_error_line(err: str) -> str:
    """stderr is exactly one line, ``librarian: error: …`` (with its hint, if any)."""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("librarian: error: "), err
    return lines[0]


def hand_commit(library: Any, subject: str, trailers: Any, changes: Any) -> str:
    """A commit made around librarian's commands (as plain git or another tool would),
    through the one transaction: returns the new commit id."""
    from librarian.txn.transaction import Transaction

    with Transaction(library) as tx:
        for change in changes:
            tx.change(change)
        return tx.commit(subject, trailers).commit


def committed_policy(library: Any) -> Any:
    """The policy of the library's committed library.yaml."""
    from librarian.library.snapshot import Snapshot

    with library.store() as store:
        return Snapshot.head(library, store).policy


def commit_config_edit(library: Path, old: str, new: str) -> None:
    """Edit the committed library.yaml (``old`` -> ``new``) in one commit, as a user would
    with an editor and ``git commit``: library.yaml as committed is what commands obey."""
    from librarian.library.layout import Library
    from librarian.txn.changes import FileChange

    path = library / "library.yaml"
    text = path.read_text()
    assert old in text, old
    hand_commit(Library(library, GENERATED), "edit library.yaml", [],
                [FileChange("library.yaml", text.replace(old, new).encode())])


def cli(capsys: pytest.CaptureFixture[str], library: Path, *args: str) -> CliResult:
    """``librarian --library LIBRARY ARGS…`` in process: the one way tests run a command on
    a library (plain helpers such as ``refused`` call it too, so it is a function rather
    than a fixture)."""
    return run_main(capsys, "--library", str(library), *args)


def cli_ok(capsys: pytest.CaptureFixture[str], library: Path, *args: str) -> CliResult:
    """``cli`` for a command that must succeed."""
    result = cli(capsys, library, *args)
    assert result.code == 0, result.err
    return result


def cli_out(capsys: pytest.CaptureFixture[str], library: Path, *args: str) -> str:
    """What a command that must succeed prints on stdout."""
    return cli_ok(capsys, library, *args).out


class HashCounter:
    """Counts the item directories the stat cache reads whole (in this process)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from librarian.cache import statcache

        self.calls = 0
        real = statcache.hash_work_dir

        def counting(root: Path):  # type: ignore[no-untyped-def]
            self.calls += 1
            return real(root)

        monkeypatch.setattr(statcache, "hash_work_dir", counting)


def settle_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Treat every file written before now as settled, by the wall clock: a test writes
    files and scans them within one tick of the filesystem's clock, which the stat cache
    rightly distrusts."""
    from librarian.cache import statcache

    monkeypatch.setattr(statcache, "racy_after_ns", lambda _cache_dir: time.time_ns())


def modules_after(library: Path, *args: str) -> tuple[int, str, set[str]]:
    """Run one command in a fresh interpreter: its exit code, stdout and every module it
    loaded (what a command imports is part of its cost)."""
    code = ("import json, sys\nfrom librarian.cli.main import main\n"
            f"try:\n    main(['--library', {str(library)!r}, *{list(args)!r}])\n"
            "except SystemExit as exc:\n    code = exc.code or 0\nelse:\n    code = 0\n"
            "sys.stderr.write('\\n' + json.dumps([code, sorted(sys.modules)]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    exit_code, modules = json.loads(done.stderr.rsplit("\n", 1)[-1])
    return exit_code, done.stdout, set(modules)


def _processors() -> int:
    from librarian.core import halves

    return halves.processors()


#: For a test of work split with a forked child (``core.halves``): nothing forks on one.
two_processors = pytest.mark.skipif(_processors() < 2, reason="one processor: nothing is forked")


def count_forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one at each ``os.fork`` of this process from now on."""
    forks: list[int] = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    return forks
