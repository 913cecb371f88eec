"""Benchmark ``librarian mcp``: start-up to an answered ``initialize``, and ``list_skills``
on a running server, for a library of N skills.

    python bench/mcp_server.py [--items 1000] [--runs 11] [--keep DIR]

Builds the library as ``bench/run.py`` does (N skills of 5 small files, committed with the
git binary), then with the MCP SDK's own stdio client:

- start: spawn ``python -m librarian mcp`` and wait for the ``initialize`` result, a new
  process each run (median of --runs);
- list_skills: round trips on one running server, first call after start (registry
  cache warm on disk) excluded, median of --runs calls;
- list_skills after a change: HEAD moved by one more commit before each call (the
  registry is rebuilt from the item summaries cache).

Benchmarks are never part of the test suite. Needs the git binary and the mcp extra.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import ENV, LIBRARIAN, build_library, run  # noqa: E402


def _params(root: Path) -> StdioServerParameters:
    return StdioServerParameters(command=LIBRARIAN[0], args=[*LIBRARIAN[1:], "mcp"],
                                 env=ENV, cwd=str(root))


async def _start_once(root: Path) -> float:
    start = time.perf_counter()
    async with stdio_client(_params(root)) as (read, write), ClientSession(
            read, write, client_info=types.Implementation(name="bench", version="1")) as s:
        await s.initialize()
        elapsed = time.perf_counter() - start
    return elapsed


async def _list_calls(root: Path, runs: int, change: bool) -> tuple[float, int]:
    samples = []
    async with stdio_client(_params(root)) as (read, write), ClientSession(
            read, write, client_info=types.Implementation(name="bench", version="1")) as s:
        await s.initialize()
        first = await s.call_tool("list_skills", {})
        assert first.structured_content is not None
        count = len(first.structured_content["skills"])
        for number in range(runs):
            if change:
                (root / "README.md").write_text(f"change {number}\n")
                run(["git", "commit", "-qam", f"change {number}"], root)
            start = time.perf_counter()
            result = await s.call_tool("list_skills", {})
            samples.append(time.perf_counter() - start)
            assert not result.is_error
    return statistics.median(samples), count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = (args.keep or Path(tmp)) / "library"
        if not (root / "library.yaml").exists():
            build_library(root, args.items)
        run(LIBRARIAN + ["prompt"], root)  # the registry cache, as after any prompt
        starts = [anyio.run(_start_once, root) for _ in range(args.runs + 1)][1:]
        warm, count = anyio.run(_list_calls, root, args.runs, False)
        changed, _ = anyio.run(_list_calls, root, args.runs, True)
    print(f"{count} skills listed; median of {args.runs}")
    print(f"  start + initialize        {statistics.median(starts) * 1000:7.0f} ms")
    print(f"  list_skills (running)     {warm * 1000:7.1f} ms")
    print(f"  list_skills after a commit {changed * 1000:6.1f} ms")


if __name__ == "__main__":
    main()
