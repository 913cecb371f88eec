"""Benchmark librarian against the git command line on the same synthetic library.

    python bench/run.py --items 10000 [--runs 7] [--keep DIR]
    python bench/run.py scale --items 1000 [--runs 5] [--before DIR] [--tree NAME=DIR] [--cases …]

Builds a library of N skills of 5 small files each (committed with the git binary, which
is the fast way to make the fixture), then times whole processes, median of --runs:

- ``librarian status`` vs ``git status`` (warm cache, clean tree);
- retaining one more item (``librarian retain``) vs ``git add`` + ``git commit`` of an
  equivalent directory, at N items and at 10 items, to show the cost does not grow.

``scale`` runs the speed-at-scale cases of ``bench/scale.py`` (first install, status,
update of 10 / 100 changed items, nothing new, inspect, prompt, peak memory, source
remove, each against git and optionally other trees); its arguments are
scale.py's.

Benchmarks are never part of the test suite. Needs the git binary.
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
from collections.abc import Callable, Sequence
from pathlib import Path

ENV = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
ENV.update(GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.org",
           GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.org")
LIBRARIAN = [sys.executable, "-m", "librarian"]


def run(cmd: Sequence[str], cwd: Path) -> None:
    subprocess.run(cmd, cwd=cwd, env=ENV, check=True, stdout=subprocess.DEVNULL)


def skill_files(name: str) -> dict[str, str]:
    return {
        "SKILL.md": f"---\nname: {name}\ndescription: Synthetic skill {name} for the "
        "benchmark.\n---\n\n# Steps\n\n1. Do the thing.\n",
        "scripts/run.sh": "#!/bin/sh\necho run\n",
        "references/guide.md": f"# Guide for {name}\n\nSome reference text.\n",
        "references/notes.md": "Notes.\n" * 5,
        "assets/data.txt": f"{name}\n" * 10,
    }


def write_skill(root: Path, name: str) -> None:
    for relative, text in skill_files(name).items():
        path = root / name / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if relative.endswith(".sh"):
            path.chmod(0o755)


def build_library(root: Path, items: int) -> None:
    root.parent.mkdir(parents=True, exist_ok=True)
    run(LIBRARIAN + ["init", str(root), "--name", "bench"], root.parent)
    for number in range(items):
        write_skill(root / "skills", f"skill-{number:05d}")
    run(["git", "add", "-A"], root)
    run(["git", "commit", "-q", "-m", f"{items} synthetic skills"], root)
    run(["git", "status", "--porcelain"], root)  # refresh git's own stat cache
    run(LIBRARIAN + ["status"], root)  # and librarian's


def median_seconds(action: Callable[[int], None], runs: int, warmup: int = 1) -> float:
    for number in range(warmup):
        action(-1 - number)
    samples = []
    for number in range(runs):
        start = time.perf_counter()
        action(number)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def measure(root: Path, runs: int, tag: str) -> dict[str, float]:
    sources = root.parent / f"sources-{tag}"
    results = {
        "status/librarian": median_seconds(lambda _: run(LIBRARIAN + ["status"], root), runs),
        "status/git": median_seconds(lambda _: run(["git", "status", "--porcelain"], root), runs),
    }

    def retain(number: int) -> None:
        name = f"new-{tag}-lib-{number + 10}"
        write_skill(sources, name)
        run(LIBRARIAN + ["retain", str(sources / name)], root)

    def git_add_commit(number: int) -> None:
        name = f"new-{tag}-git-{number + 10}"
        write_skill(root / "skills", name)
        run(["git", "add", f"skills/{name}"], root)
        run(["git", "commit", "-q", "-m", f"add {name}"], root)

    results["retain/librarian"] = median_seconds(retain, runs)
    results["retain/git add+commit"] = median_seconds(git_add_commit, runs)
    return results


def report(items: int, results: dict[str, float]) -> None:
    print(f"\n{items} items (5 files each), median seconds, whole processes")
    for what in ("status", "retain"):
        ours = results[f"{what}/librarian"]
        theirs = next(v for k, v in results.items() if k.startswith(what + "/") and
                      not k.endswith("librarian"))
        label = "git status" if what == "status" else "git add + git commit"
        print(f"  {what:<7} librarian {ours:7.3f}   {label:<21} {theirs:7.3f}   "
              f"ratio {ours / theirs:5.2f}x")


def main() -> None:
    if sys.argv[1:2] == ["scale"]:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import scale

        sys.argv = [str(Path(scale.__file__)), *sys.argv[2:]]
        scale.main()
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="build here and keep it (default: temp)")
    args = parser.parse_args()
    if shutil.which("git") is None:
        sys.exit("bench/run.py needs the git binary")
    workspace = args.keep or Path(tempfile.mkdtemp(prefix="librarian-bench-"))
    try:
        for items in sorted({10, args.items}):
            root = workspace / f"library-{items}"
            started = time.perf_counter()
            build_library(root, items)
            print(f"built {root} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
            report(items, measure(root, args.runs, str(items)))
    finally:
        if args.keep is None:
            shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    main()
