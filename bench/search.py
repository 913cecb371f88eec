"""Benchmark ``librarian search`` / ``search_skills`` over a large library.

    python bench/search.py [--items 10000] [--runs 11] [--keep DIR]

Builds a library of N skills (``bench/run.py``'s fixture, committed with the git binary)
and times, in one process as ``librarian mcp`` serves it:

- index from nothing: the first search of a library (every visible skill read once);
- first query: a new index connection and registry, the index already built (what a new
  ``librarian mcp`` or ``librarian search`` pays): the target is at most 300 ms;
- later queries: the same connection, HEAD unchanged: the target is at most 20 ms;
- after one skill changed: only that skill is read and indexed again;

and, for reference, whole ``librarian search`` processes (interpreter and imports
included). Benchmarks are never part of the test suite. Needs the git binary.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from run import ENV, LIBRARIAN, build_library, median_seconds  # noqa: E402

from librarian.agents.claude_manifests import GENERATED
from librarian.library.layout import Library  # noqa: E402
from librarian.prompt.registry import load_registry  # noqa: E402
from librarian.prompt.search import INDEX_FILE, SearchIndex  # noqa: E402

QUERIES = ("skill 00042", "does a thing", "skill", "09999 thing", "nothing-matches-this")


def timed(action: object) -> float:
    start = time.perf_counter()
    action()  # type: ignore[operator]
    return time.perf_counter() - start


def first_query(library: Library, query: str) -> None:
    index = SearchIndex(library)
    try:
        index.query(load_registry(library), query, 10)
    finally:
        index.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--keep", type=Path, help="build here and keep it (default: temp)")
    args = parser.parse_args()
    if shutil.which("git") is None:
        sys.exit("bench/search.py needs the git binary to build its fixture")
    workspace = args.keep or Path(tempfile.mkdtemp(prefix="librarian-bench-search-"))
    root = workspace / "library"
    try:
        if not root.is_dir():
            build_library(root, args.items)
        library = Library(root, GENERATED)
        load_registry(library)  # the registry cache, as any earlier prompt leaves it
        (library.cache_dir / INDEX_FILE).unlink(missing_ok=True)
        results = {"index from nothing": timed(lambda: first_query(library, "skill"))}
        firsts = [timed(lambda q=q: first_query(library, q))
                  for _ in range(args.runs) for q in QUERIES[:1]]
        results["first query (index built)"] = statistics.median(firsts)
        index = SearchIndex(library)
        registry = load_registry(library)
        later = [timed(lambda q=q: index.query(registry, q, 10))
                 for _ in range(args.runs) for q in QUERIES]
        index.close()
        results["later queries (median)"] = statistics.median(later)
        results["later queries (slowest)"] = max(later)
        skill = root / "skills" / "skill-00007" / "SKILL.md"
        skill.write_text(skill.read_text() + f"\nChanged {time.time_ns()}.\n")
        subprocess.run(["git", "add", "-A"], cwd=root, env=ENV, check=True)
        subprocess.run(["git", "commit", "-q", "-m", "one skill changed"], cwd=root, env=ENV,
                       check=True)
        results["after one skill changed"] = timed(lambda: first_query(library, "changed"))
        results["whole process: librarian search"] = median_seconds(
            lambda _: subprocess.run(LIBRARIAN + ["search", "skill 00042"], cwd=root,
                                     env=ENV, check=True, stdout=subprocess.DEVNULL),
            max(3, args.runs // 3))
        print(f"\nsearch, {args.items} skills, median of {args.runs} runs")
        for name, seconds in results.items():
            print(f"  {name:36} {seconds * 1000:9.1f} ms")
    finally:
        if args.keep is None:
            shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    main()
