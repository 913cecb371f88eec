"""Time one splice of a 5-file directory into a 50,000-entry git index.

Builds a v2 index of 10,000 items x 5 files with ``build_index`` in a temporary directory
(stat fields taken from one real file: the scan never looks at them), then times
``splice_index`` replacing one item directory and adding a new one, best and median of
several runs, against dulwich's ``Index`` read + write of the same file.

    python bench/index_splice.py [entries]
"""

from __future__ import annotations

import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from librarian.git.index import IndexEntry, build_index, splice_index  # noqa: E402
from librarian.git.indexscan import read_index_paths  # noqa: E402

FILES = ("README.md", "manifest.yaml", "prompt.md", "scripts/run.sh", "tests/case.yaml")


def _entries(item: str, stat_of: Path) -> list[IndexEntry]:
    st = stat_of.lstat()
    return [
        IndexEntry(f"items/{item}/{name}", hashlib.sha1(name.encode()).digest(), 0o100644, st)
        for name in FILES
    ]


def _time(action: object, runs: int) -> list[float]:
    assert callable(action)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sample = root / "sample"
        sample.write_bytes(b"x")
        index = root / "index"
        entries = [e for i in range(total // len(FILES)) for e in _entries(f"item-{i:05d}", sample)]
        build_index(index, entries)
        size = index.stat().st_size
        middle = f"item-{total // len(FILES) // 2:05d}"

        def replace() -> None:
            splice_index(index, remove_prefixes=[f"items/{middle}"], add=_entries(middle, sample))

        def add_new() -> None:
            splice_index(index, remove_prefixes=["items/new"], add=_entries("new", sample))

        replace_times = _time(replace, 21)
        add_times = _time(add_new, 21)
        assert len(read_index_paths(index)) == total + len(FILES)

        from dulwich.index import Index

        def dulwich_pass() -> None:
            idx = Index(str(index))
            idx.write()

        dulwich_times = _time(dulwich_pass, 3)
        print(f"index: {total} entries, {size / 1e6:.1f} MB, v2")
        for label, times in (
            ("splice (replace 1 dir of 5 files)", replace_times),
            ("splice (add a new 5-file dir)", add_times),
            ("dulwich Index read + write", dulwich_times),
        ):
            ms = [t * 1000 for t in times]
            print(f"{label:36s} best {min(ms):7.1f} ms  median {statistics.median(ms):7.1f} ms")


if __name__ == "__main__":
    main()
