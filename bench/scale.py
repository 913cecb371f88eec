"""Speed at scale: librarian against git, and against an older librarian, paired.

    python bench/scale.py --items 1000 [--runs 5] [--before DIR] [--tree NAME=DIR ...]
                          [--cases a,b,...]

Builds an upstream repository of N skills (5 small files each), a plain ``git clone`` of
it, and one library per librarian under test, each subscribed to the upstream and installed
by ``update``. ``--before DIR`` names the source tree of another librarian (e.g. a
``git worktree add --detach /tmp/before <commit>``), run with ``PYTHONPATH=DIR``; without it
only this tree is measured. ``--tree NAME=DIR`` (repeatable) adds more contenders the same
way, e.g. this tree with one speed device taken out (docs/performance.md, "Speed devices
kept"). Every round
runs each contender once, in rotating order, on the same change, so the ratios are of
paired runs on a shared machine; the medians are printed, wall time and, on a second
line, CPU time (user + system of the process and its children), the median of the
per-round ratios to git (``paired``) and of each other contender's to this tree
(``NAME/after``).

Run it with an interpreter that has librarian's dependencies but not librarian itself
(``pip install`` the dependencies into a fresh venv): an editable install puts an import
finder into every interpreter start (a few ms each), which users of a normal install
never pay, and PYTHONPATH picks the tree under test anyway.

Cases (``--cases``, default all):

- ``install``: first install of the N items (``update`` of a new subscription), against
  ``git clone`` of the same upstream, ``--runs`` rounds in rotating order, each into a new
  directory after a ``sync``; the upstream is packed first (``git gc``), as a real one is;
  ``--drop-caches`` drops the kernel's dentry and inode caches before each timed install
  and clone (Linux, as root);
- ``status-first``: the first ``status`` after each install, against the first ``git
  status`` after each clone (git's clone leaves an index holding every file's stat; an
  update seeds the stat cache likewise);
- ``floor``: Python importing the entry point (typer, click, the command table), what
  every command pays before any work, against ``git --version``;
- ``status``: ``librarian status`` against ``git status`` in the same library (warm);
- ``update10``, ``update100``: 10 / 100 items changed upstream, against ``git fetch`` +
  ``git checkout`` of the same commit in the clone; ``noop``: nothing new upstream;
  ``noop-cold``: the same with the remembered up-to-date plan deleted before each round
  (the first update after a change pays for planning once);
- ``inspect``: ``inspect --json`` against ``git ls-tree -r HEAD``;
- ``prompt``: ``prompt`` twice, the second timed (warm cache);
- ``memory``: peak resident memory of status and of an update of 10 changed, against git;
- ``remove``: ``source remove`` of the whole collection (last: it empties the libraries).

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

sys.path.insert(0, str(Path(__file__).parent))
from update import ENV, change_upstream, make_upstream, run  # noqa: E402

HERE = Path(__file__).resolve().parent.parent
CASES = ("install", "status-first", "floor", "status", "noop", "noop-cold", "update10",
         "update100", "inspect", "prompt", "memory", "remove")


def measure(cmd: Sequence[str], cwd: Path, env: dict[str, str]) -> tuple[float, int, float]:
    """Wall time, peak resident memory (KiB) and CPU time of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    assert proc.stderr is not None
    err = proc.stderr.read()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err.decode(errors='replace')}")
    return elapsed, usage.ru_maxrss, usage.ru_utime + usage.ru_stime


class Contender:
    def __init__(self, name: str, tree: Path, library: Path) -> None:
        self.name, self.library = name, library
        self.env = {**ENV, "PYTHONPATH": str(tree)}

    def cmd(self, *args: str) -> list[str]:
        if args == ("<floor>",):  # start Python and import the entry point, run nothing
            return [sys.executable, "-c", "import librarian.cli.main"]
        return [sys.executable, "-m", "librarian", "--library", str(self.library), *args]

    def time(self, *args: str) -> tuple[float, int, float]:
        return measure(self.cmd(*args), self.library, self.env)


def row(case: str, samples: dict[str, list[float]], unit: str = "s") -> None:
    cpu = {k[:-4]: v for k, v in samples.items() if k.endswith(" cpu")}
    samples = {k: v for k, v in samples.items() if not k.endswith(" cpu")}
    medians = {k: statistics.median(v) for k, v in samples.items() if v}
    text = "  ".join(f"{k} {v:8.3f} {unit}" if unit == "s" else f"{k} {v / 1024:7.1f} MiB"
                     for k, v in medians.items())
    ratios = ""
    if "git" in medians and medians["git"] > 0:
        ratios = "  " + "  ".join(f"{k}/git {v / medians['git']:5.2f}x"
                                  for k, v in medians.items() if k != "git")
    if "git" in samples and unit == "s" and all(samples["git"]):
        git = samples["git"]
        ratios += "  paired " + "  ".join(
            f"{k}/git {statistics.median([a / b for a, b in zip(v, git, strict=True)]):5.2f}x"
            for k, v in samples.items() if k != "git")
    if samples.get("before") and samples.get("after") and unit == "s":
        pairs = [a / b for a, b in zip(samples["after"], samples["before"], strict=True) if b]
        ratios += f"  after/before {statistics.median(pairs):5.2f}x (paired)"
    if samples.get("after") and unit == "s":
        for name, times in samples.items():
            if name in ("after", "before", "git"):
                continue
            pairs = [a / b for a, b in zip(times, samples["after"], strict=True) if b]
            ratios += f"  {name}/after {statistics.median(pairs):5.3f}x (paired)"
    n = len(next(iter(samples.values())))
    print(f"{case:<28} {text}{ratios}  (median of {n})", flush=True)
    if cpu and unit == "s":
        row("  cpu", cpu)


def rounds(runs: int, contenders: list[Contender], git: Sequence[Sequence[str]] | None,
           clone: Path, args: Sequence[str], prepare: object = None,
           memory: bool = False) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {c.name: [] for c in contenders}
    samples.update({f"{c.name} cpu": [] for c in contenders})
    if git is not None:
        samples["git"] = []
        samples["git cpu"] = []
    for number in range(runs):
        if callable(prepare):
            prepare(number)
        order: list[Contender | None] = [*contenders, None]
        shift = number % len(order)
        for who in order[shift:] + order[:shift]:
            if who is None:
                if git is None:
                    continue
                total, peak, cpu = 0.0, 0, 0.0
                for cmd in git:
                    elapsed, rss, used = measure(cmd, clone, ENV)
                    total, peak, cpu = total + elapsed, max(peak, rss), cpu + used
                samples["git"].append(float(peak) if memory else total)
                samples["git cpu"].append(cpu)
            else:
                elapsed, rss, used = who.time(*args)
                samples[who.name].append(float(rss) if memory else elapsed)
                samples[f"{who.name} cpu"].append(used)
    return samples


def settle(upstream: Path) -> None:
    """Pack the upstream as a real one is, once: ``git commit`` of thousands of objects
    starts ``git gc --auto`` in the background, which would repack (and delete 10,000s of
    loose objects) while the installs are timed, or under ``git clone``'s feet."""
    for _ in range(600):
        done = subprocess.run(["git", "-c", "gc.auto=0", "gc", "-q"], cwd=upstream, env=ENV,
                              capture_output=True)
        if done.returncode == 0:
            break
        if b"already running" not in done.stderr:
            raise SystemExit(f"git gc failed: {done.stderr.decode(errors='replace')}")
        time.sleep(0.5)  # the background gc --auto holds gc.pid
    os.sync()


def drop_file_caches() -> None:
    """Sync, then drop the kernel's cached dentries and inodes (Linux, as root): with
    millions cached, creating files costs several times more system time (measured on the project's
    machine), for git and librarian alike."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("2\n")
    except OSError as exc:
        raise SystemExit(f"--drop-caches: {exc}") from None


def install_rounds(runs: int, contenders: list[Contender], upstream: Path, clone: Path,
                   work: Path, drop: bool = False,
                   firsts: dict[str, list[float]] | None = None) -> dict[str, list[float]]:
    """First installs, ``runs`` rounds in rotating order, each contender and ``git clone``
    into a new directory after a ``sync`` (the first round's are the libraries the other
    cases use). Nothing is deleted until the end: a deletion of 50,000 files slows file
    creation on this disk for a minute after. ``firsts`` collects the first status after
    each install (``git status`` after each clone)."""
    installs: dict[str, list[float]] = {"git": [], **{who.name: [] for who in contenders}}
    libraries = {who.name: who.library for who in contenders}
    for number in range(runs):
        order: list[Contender | None] = [*contenders, None]
        shift = number % len(order)
        for who in order[shift:] + order[:shift]:
            suffix = f"-{number}" if number else ""
            os.sync()
            if who is None:
                target = clone.with_name(clone.name + suffix)
                if drop:
                    drop_file_caches()
                installs["git"].append(measure(["git", "clone", "-q", str(upstream),
                                                str(target)], work, ENV)[0])
                if firsts is not None:
                    firsts.setdefault("git", []).append(measure(["git", "status"], target,
                                                                ENV)[0])
                continue
            who.library = libraries[who.name].with_name(libraries[who.name].name + suffix)
            # Each contender's own code creates its library (PYTHONPATH is its tree).
            run([sys.executable, "-m", "librarian", "init", str(who.library), "--name",
                 "bench"], work, who.env)
            who.env["LIBRARIAN_LIBRARY"] = str(who.library)
            run(who.cmd("source", "add", "team", str(upstream)), work, who.env)
            if drop:
                drop_file_caches()  # just before the timed command, as for git
            installs[who.name].append(who.time("update")[0])
            if firsts is not None:
                firsts.setdefault(who.name, []).append(who.time("status")[0])
    for who in contenders:
        who.library = libraries[who.name]
        who.env["LIBRARIAN_LIBRARY"] = str(who.library)
    return installs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", type=Path, default=None)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--drop-caches", action="store_true",
                        help="drop the kernel's dentry and inode caches before each install "
                             "(Linux, root)")
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=DIR",
                        help="another librarian source tree to measure (repeatable)")
    args = parser.parse_args()
    cases = args.cases.split(",")
    work = args.keep or Path(tempfile.mkdtemp(prefix="librarian-bench-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    upstream, clone = work / "upstream", work / "clone"
    trees = {"after": HERE, **({"before": args.before.resolve()} if args.before else {})}
    for spec in args.tree:
        name, _, directory = spec.partition("=")
        trees[name] = Path(directory).resolve()
    contenders = [Contender(name, tree, work / f"library-{name}") for name, tree in
                  trees.items()]
    print(f"{args.items} items, {args.runs} paired runs; contenders: "
          + ", ".join(f"{k}={v}" for k, v in trees.items()), flush=True)
    try:
        make_upstream(upstream, args.items)
        settle(upstream)
        firsts: dict[str, list[float]] | None = {} if "status-first" in cases else None
        installs = install_rounds(args.runs if "install" in cases else 1, contenders,
                                  upstream, clone, work, args.drop_caches, firsts)
        if "install" in cases:
            row("first install", installs)
        if firsts:
            row("first status after it", firsts)
        revision = [0]

        def change(count: int) -> object:
            def prepare(_: int) -> None:
                revision[0] += 1
                change_upstream(upstream, args.items, count, revision[0])
            return prepare

        fetch = [["git", "fetch", "-q", "origin", "main"],
                 ["git", "checkout", "-q", "--detach", "FETCH_HEAD"]]
        if "floor" in cases:
            row("process floor", rounds(args.runs, contenders,
                                                    [["git", "--version"]], clone,
                                                    ["<floor>"]))
        if "status" in cases:
            for who in contenders:
                who.time("status")  # warm the caches
            measure(["git", "status"], clone, ENV)
            row("status (warm)", rounds(args.runs, contenders, [["git", "status"]], clone,
                                        ["status"]))
        if "noop" in cases:
            row("update, nothing new", rounds(args.runs, contenders, None, clone, ["update"]))
        if "noop-cold" in cases:
            def forget(_: int) -> None:
                for who in contenders:
                    memo = who.library / ".git" / "librarian" / "cache" / "up-to-date.json"
                    memo.unlink(missing_ok=True)
            row("update, nothing new (cold)", rounds(args.runs, contenders, None, clone,
                                                     ["update"], forget))
        for case, count in (("update10", 10), ("update100", 100)):
            if case in cases:
                row(f"update, {count} changed", rounds(args.runs, contenders, fetch, clone,
                                                       ["update"], change(count)))
        if "inspect" in cases:
            row("inspect --json", rounds(args.runs, contenders,
                                         [["git", "ls-tree", "-r", "HEAD"]], clone,
                                         ["inspect", "--json"]))
        if "prompt" in cases:
            for who in contenders:
                who.time("prompt")
            row("prompt (warm)", rounds(args.runs, contenders, None, clone, ["prompt"]))
        if "memory" in cases:
            row("peak memory: status", rounds(args.runs, contenders, [["git", "status"]],
                                              clone, ["status"], memory=True), unit="KiB")
            row("peak memory: update 10", rounds(args.runs, contenders, fetch, clone,
                                                 ["update"], change(10), memory=True),
                unit="KiB")
        if "remove" in cases:
            samples = {who.name: [who.time("source", "remove", "team")[0]]
                       for who in contenders}
            row("source remove", samples)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
