"""Benchmark ``librarian update`` against ``git fetch`` + ``git checkout`` of the same change.

    python bench/update.py [--items 1000] [--changed 10] [--runs 7] [--keep DIR]

Builds an upstream git repository of N skills (5 small files each, under ``skills/``),
subscribes a librarian library to it and installs it, and makes a plain ``git clone`` of
it. Each run commits a change to ``--changed`` items upstream, then times, as whole
processes on the same machine:

- ``librarian update`` (fetch, plan, stage, swap, lock, commit);
- ``git fetch`` + ``git checkout`` of the fetched commit in the clone.

Prints the medians and their ratio, then ``librarian update`` with 1 and 10× the changed
items, to show that the work follows the number of changed items, not the collection's size,
and last ``librarian update`` when the ``--changed`` items also carry a local edit (in
another part of SKILL.md), so that each is merged three ways (spec §6.3).
Never part of the test suite. Needs the git binary.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ENV = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
ENV.update(GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.org",
           GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.org",
           GIT_CONFIG_NOSYSTEM="1")
# Time librarian as an installed package runs: with its byte-code cached.
ENV.pop("PYTHONDONTWRITEBYTECODE", None)
LIBRARIAN = [sys.executable, "-m", "librarian"]


def run(cmd: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    subprocess.run(cmd, cwd=cwd, env=env or ENV, check=True, stdout=subprocess.DEVNULL)


def timed(cmds: Sequence[Sequence[str]], cwd: Path) -> float:
    start = time.perf_counter()
    for cmd in cmds:
        run(cmd, cwd)
    return time.perf_counter() - start


def skill_files(name: str, revision: int) -> dict[str, str]:
    return {
        "SKILL.md": f"---\nname: {name}\ndescription: Synthetic skill {name} for the "
        f"benchmark.\n---\n\n# Steps\n\n1. Do the thing (revision {revision}).\n",
        "scripts/run.sh": "#!/bin/sh\necho run\n",
        "references/guide.md": f"# Guide for {name}\n\nSome reference text.\n",
        "references/notes.md": "Notes.\n" * 5,
        "assets/data.txt": f"{name}\n" * 10,
    }


def write_skill(root: Path, name: str, revision: int = 0) -> None:
    for relative, text in skill_files(name, revision).items():
        path = root / "skills" / name / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if relative.endswith(".sh"):
            path.chmod(0o755)


def make_upstream(upstream: Path, items: int) -> None:
    """A git repository of ``items`` skills, committed once."""
    upstream.mkdir()
    run(["git", "init", "-q", "-b", "main"], upstream)
    for number in range(items):
        write_skill(upstream, f"skill-{number:05d}")
    run(["git", "add", "-A"], upstream)
    run(["git", "commit", "-q", "-m", "initial"], upstream)


def change_upstream(upstream: Path, items: int, changed: int, revision: int) -> None:
    step = max(1, items // changed)
    for number in range(0, step * changed, step):
        write_skill(upstream, f"skill-{number % items:05d}", revision)
    run(["git", "add", "-A"], upstream)
    run(["git", "commit", "-q", "-m", f"revision {revision}"], upstream)


def edit_locally(library: Path, items: int, changed: int) -> None:
    """A local edit to the heading of each item ``change_upstream`` changes: a merge."""
    step = max(1, items // changed)
    for number in range(0, step * changed, step):
        path = library / "sources" / "team" / "skills" / f"skill-{number % items:05d}" / "SKILL.md"
        path.write_text(path.read_text().replace("# Steps\n", "# Steps (local note)\n"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--changed", type=int, default=10)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    if shutil.which("git") is None:
        sys.exit("the git binary is needed for the comparison")
    work = args.keep or Path(tempfile.mkdtemp(prefix="librarian-bench-update-"))
    work.mkdir(parents=True, exist_ok=True)
    upstream, library, clone = work / "upstream", work / "library", work / "clone"
    try:
        make_upstream(upstream, args.items)
        run(["git", "clone", "-q", str(upstream), str(clone)], work)
        run(LIBRARIAN + ["init", str(library), "--name", "bench"], work)
        run(LIBRARIAN + ["--library", str(library), "source", "add", "team", str(upstream)],
            work)
        start = time.perf_counter()
        run(LIBRARIAN + ["--library", str(library), "update"], work)
        print(f"first install of {args.items} items: {time.perf_counter() - start:.2f} s")

        ours, theirs = [], []
        revision = 0
        for _ in range(args.runs):
            revision += 1
            change_upstream(upstream, args.items, args.changed, revision)
            ours.append(timed([LIBRARIAN + ["--library", str(library), "update"]], work))
            theirs.append(timed([["git", "fetch", "-q", "origin", "main"],
                                 ["git", "checkout", "-q", "--detach", "FETCH_HEAD"]], clone))
        mine, git = statistics.median(ours), statistics.median(theirs)
        print(f"{args.items} items, {args.changed} changed upstream, median of {args.runs}:")
        print(f"  librarian update          {mine * 1000:8.1f} ms")
        print(f"  git fetch + git checkout  {git * 1000:8.1f} ms")
        print(f"  ratio                     {mine / git:8.2f}x")

        startup = statistics.median(
            timed([LIBRARIAN + ["--library", str(library), "update"]], work) for _ in range(3))
        print(f"  librarian update, nothing new upstream (process floor): "
              f"{startup * 1000:.1f} ms")
        for changed in (1, args.changed * 10):
            samples = []
            for _ in range(max(3, args.runs // 2)):
                revision += 1
                change_upstream(upstream, args.items, changed, revision)
                samples.append(timed([LIBRARIAN + ["--library", str(library), "update"]], work))
            print(f"  librarian update, {changed:4d} changed: "
                  f"{statistics.median(samples) * 1000:8.1f} ms")
        edit_locally(library, args.items, args.changed)
        samples = []
        for _ in range(args.runs):
            revision += 1
            change_upstream(upstream, args.items, args.changed, revision)
            samples.append(timed([LIBRARIAN + ["--library", str(library), "update"]], work))
        print(f"  librarian update, {args.changed:4d} changed and edited locally (merged): "
              f"{statistics.median(samples) * 1000:8.1f} ms")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
