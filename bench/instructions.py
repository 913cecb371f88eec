"""Instructions of one update against git's, counted by valgrind.

    python bench/instructions.py --items 1000 [--changed 10] [--before DIR] [--import-only]

Wall time on a shared machine moves by 20% from hour to hour; an instruction count
(``valgrind --tool=callgrind``) is the same on every run of the same program on the same
input, so it shows what a change to the code did, to the instruction. It is not time: a
system call, a fork or a cache miss costs no more than an instruction here, which is why
git's ratio differs from the wall-time ratio of ``bench/scale.py``.

Builds an upstream of N skills, one library per tree under test subscribed to it and
installed, and a ``git clone``; commits a change to ``--changed`` items upstream; then
counts, each on a fresh copy of the same state, ``librarian update`` of every tree and
``git fetch`` + ``git checkout`` (each git process and its children) in the clone, whose
index is refreshed after the copy. ``--import-only``: instead, Python importing the modules
an update loads (the fixed cost every such command pays). Prints millions of
instructions. Never part of the test suite. Needs git and valgrind.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from update import ENV, change_upstream, make_upstream, run  # noqa: E402

HERE = Path(__file__).resolve().parent.parent
COUNTED = re.compile(rb"Collected : (\d+)")
UPDATE_IMPORTS = "import librarian.cli.main, librarian.cli.sources, librarian.sources.update"


def counted(cmd: list[str], cwd: Path, env: dict[str, str]) -> int:
    """Instructions of ``cmd`` and of every process it starts."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           "--trace-children=yes", *cmd], cwd=cwd, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.decode(errors='replace')}")
    return sum(int(n) for n in COUNTED.findall(done.stderr))


def fresh(state: Path, work: Path) -> Path:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(state, work, symlinks=True)
    return work


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--changed", type=int, default=10)
    parser.add_argument("--before", type=Path, default=None)
    parser.add_argument("--import-only", action="store_true")
    args = parser.parse_args()
    trees = {"after": HERE, **({"before": args.before.resolve()} if args.before else {})}
    envs = {name: {**ENV, "PYTHONPATH": str(tree)}
            for name, tree in trees.items()}
    python = [sys.executable]
    for name, tree in trees.items():  # byte-code cached, as an installed package has it
        subprocess.run([*python, "-m", "compileall", "-q", str(tree / "librarian")],
                       env=envs[name], check=True, stdout=subprocess.DEVNULL)
    if args.import_only:
        for name, tree in trees.items():  # run in the tree: ``-c`` puts the cwd first
            total = counted([*python, "-c", UPDATE_IMPORTS], tree, envs[name])
            print(f"imports of an update  {name} {total / 1e6:8.1f} M", flush=True)
        print(f"python -c pass        {counted([*python, '-c', 'pass'], HERE, ENV) / 1e6:8.1f} M")
        return
    work = Path(tempfile.mkdtemp(prefix="librarian-bench-instructions-"))
    try:
        upstream, clone = work / "upstream", work / "clone"
        make_upstream(upstream, args.items)
        run(["git", "clone", "-q", str(upstream), str(clone)], work)
        for name in trees:
            library = work / f"library-{name}"
            run([*python, "-m", "librarian", "init", str(library)], work, envs[name])
            run([*python, "-m", "librarian", "--library", str(library), "source", "add",
                 "team", str(upstream)], work, envs[name])
            run([*python, "-m", "librarian", "--library", str(library), "update"], work,
                envs[name])
        change_upstream(upstream, args.items, args.changed, 1)
        print(f"{args.items} items, {args.changed} changed upstream (millions of "
              "instructions)", flush=True)
        for name in trees:
            library = fresh(work / f"library-{name}", work / "measured")
            total = counted([*python, "-m", "librarian", "update"], library, envs[name])
            print(f"librarian update  {name:6} {total / 1e6:8.1f} M", flush=True)
        clone_copy = fresh(clone, work / "measured")
        run(["git", "update-index", "-q", "--refresh"], clone_copy)  # the copy's new inodes
        fetch = counted(["git", "fetch", "-q", "origin", "main"], clone_copy, ENV)
        checkout = counted(["git", "checkout", "-q", "--detach", "FETCH_HEAD"], clone_copy, ENV)
        print(f"git fetch + checkout     {(fetch + checkout) / 1e6:8.1f} M "
              f"(fetch {fetch / 1e6:.1f}, checkout {checkout / 1e6:.1f})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
