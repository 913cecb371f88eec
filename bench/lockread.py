"""Reading ``librarian.lock``: ``load_lock`` of an N-item lock, in process.

    python bench/lockread.py [--items 10000] [--runs 7]
    PYTHONPATH=/tmp/before python bench/lockread.py ...   # another librarian's reader

Writes the lock of one source with N items (``skills/skill-NNNNN``, as ``update`` writes
it) with ``dump_lock``, then times ``load_lock`` of it ``--runs`` times and prints the
minimum and the median. Never part of the test suite.
"""

from __future__ import annotations

import argparse
import statistics
import time

from librarian.formats.lockfile import LockedSource, dump_lock, load_lock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    items = {f"skills/skill-{n:05d}": "sha256:" + f"{n + 1:064x}" for n in range(args.items)}
    data = dump_lock({"team": LockedSource("/srv/team", "main", "e" * 40, items)})
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        load_lock(data)
        times.append((time.perf_counter() - start) * 1000)
    print(f"load_lock, {args.items} items ({len(data)} bytes): min {min(times):.1f} ms, "
          f"median {statistics.median(times):.1f} ms (of {args.runs})")


if __name__ == "__main__":
    main()
