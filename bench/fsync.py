"""What batched durability saves: N small files made durable one fsync each, all written
then fsynced, or written then one ``syncfs(2)`` (core/fsutil.one_sync).

    python bench/fsync.py [--files 200] [--runs 5] [--dir DIR]

Never part of the test suite. On a shared machine a file-system sync also waits for the
other processes' dirty data; the medians of interleaved runs are printed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from librarian.core.fsutil import sync_filesystem  # noqa: E402


def write(directory: Path, count: int, each: bool) -> list[int]:
    directory.mkdir()
    open_fds = []
    for number in range(count):
        fd = os.open(directory / str(number), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"x" * 300)
        if each:
            os.fsync(fd)
            os.close(fd)
        else:
            open_fds.append(fd)
    return open_fds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="librarian-bench-fsync-", dir=args.dir))
    samples: dict[str, list[float]] = {"fsync each": [], "fsync at the end": [],
                                       "one syncfs": []}
    try:
        for run in range(args.runs):
            for case in samples:
                start = time.perf_counter()
                fds = write(base / f"{run}-{list(samples).index(case)}", args.files,
                            case == "fsync each")
                for fd in fds:
                    if case == "fsync at the end":
                        os.fsync(fd)
                    os.close(fd)
                if case == "one syncfs":
                    sync_filesystem(base)
                samples[case].append(time.perf_counter() - start)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for case, values in samples.items():
        print(f"{args.files} files, {case:<17} {statistics.median(values) * 1000:8.1f} ms "
              f"(median of {args.runs})")


if __name__ == "__main__":
    main()
