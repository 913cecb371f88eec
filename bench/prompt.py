"""Benchmark ``librarian prompt`` (what an agent runs at every session start).

    python bench/prompt.py [--items 1000] [--runs 11] [--keep DIR]

Builds a library of N skills of 5 small files each (committed with the git binary, the
fast way to make the fixture) and times whole processes, median of --runs:

- warm: the registry cache matches HEAD's tree (the usual case);
- after a change: HEAD moved (one more commit), item summaries cached;
- cold: both prompt caches deleted before every run (first call on a fresh clone);
- baseline: ``librarian --help`` (interpreter, typer and imports: the floor of any command).

Benchmarks are never part of the test suite. Needs the git binary.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import ENV, LIBRARIAN, build_library, median_seconds  # noqa: E402

CACHES = ("prompt.json", "prompt-items.json")


def prompt(root: Path) -> None:
    subprocess.run(LIBRARIAN + ["prompt"], cwd=root, env=ENV, check=True,
                   stdout=subprocess.DEVNULL)


def drop_caches(root: Path) -> None:
    for name in CACHES:
        (root / ".git" / "librarian" / "cache" / name).unlink(missing_ok=True)


def cold(root: Path) -> None:
    drop_caches(root)
    prompt(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--keep", type=Path, help="build here and keep it (default: temp)")
    args = parser.parse_args()
    if shutil.which("git") is None:
        sys.exit("bench/prompt.py needs the git binary to build its fixture")
    workspace = args.keep or Path(tempfile.mkdtemp(prefix="librarian-bench-prompt-"))
    root = workspace / "library"
    try:
        build_library(root, args.items)
        prompt(root)
        size = len(subprocess.run(LIBRARIAN + ["prompt"], cwd=root, env=ENV, check=True,
                                  capture_output=True).stdout)

        def moved(number: int) -> None:
            subprocess.run(LIBRARIAN + ["hide", f"skill-{number + 2:05d}"],
                           cwd=root, env=ENV, check=True, stdout=subprocess.DEVNULL)

        results = {
            "baseline: --help": median_seconds(
                lambda _: subprocess.run(LIBRARIAN + ["--help"], cwd=root, env=ENV, check=True,
                                         stdout=subprocess.DEVNULL), args.runs),
            "warm (cache hit)": median_seconds(lambda _: prompt(root), args.runs),
            "cold (no cache)": median_seconds(lambda _: cold(root), args.runs),
        }
        samples = []
        for number in range(args.runs):
            moved(number)  # one more commit: HEAD's tree changed, item summaries still cached
            samples.append(median_seconds(lambda _: prompt(root), 1, warmup=0))
        results["after a commit"] = sorted(samples)[len(samples) // 2]
        print(f"\nlibrarian prompt, {args.items} skills ({size} bytes of output), "
              f"median of {args.runs} whole processes")
        for label, seconds in results.items():
            print(f"  {label:<18} {seconds * 1000:7.0f} ms")
    finally:
        if args.keep is None:
            shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    main()
