"""Benchmark publishing from many clones at once with ``librarian sync``.

    python bench/sync.py [--agents 16] [--changes 10] [--gate] [--mode sync|git] [--keep DIR]

Starts a bare repository holding one library behind ``git daemon --enable=receive-pack``
on 127.0.0.1 (a free port), clones it ``--agents`` times with ``librarian clone``, and has
every clone, concurrently, make ``--changes`` changes to its own items (retain ×3, revise,
hide, show, expose, withdraw, retire, retain: the mix of the measurements before ``sync``
existed), each followed by ``librarian sync``. Prints how many changes were published,
how many syncs failed or conflicted, the tries the syncs needed, and the publish latency
(the wall time of one ``sync``, retries included): median and p95. ``--gate`` installs the
``pre-receive`` gate (``check`` of every pushed tip) on the host first. ``--mode git``
publishes with ``git pull --rebase && git push`` instead (retried on rejection, the clones
made by ``librarian clone``: the merge driver is installed), for a paired comparison.

Before ``sync`` (main ``3db9834``, ``git pull --rebase && git push`` retried on
rejection, same mix): 2 agents p95 2.0 s, 8 agents 11.7 s, 16 agents 30.1 s, with 0.20,
0.76 and 0.81 rebase conflicts per publish, all in generated files.

Loopback only; every process has a timeout. Never part of the test suite. Needs git.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

ENV = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
ENV.update(GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.org",
           GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.org",
           GIT_CONFIG_NOSYSTEM="1")
ENV.pop("PYTHONDONTWRITEBYTECODE", None)
LIBRARIAN = [sys.executable, "-m", "librarian"]
TIMEOUT = 600


def run(cmd: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)


def must(cmd: Sequence[str], cwd: Path) -> str:
    done = run(cmd, cwd)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr}")
    return done.stdout


@contextlib.contextmanager
def daemon(base: Path) -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", f"--base-path={base}", "--export-all",
         "--enable=receive-pack", f"--port={port}", "--listen=127.0.0.1", str(base)],
        env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            time.sleep(0.05)
        yield f"git://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


def skill(root: Path, name: str, revision: int = 0) -> Path:
    path = root / name
    path.mkdir(parents=True, exist_ok=True)
    (path / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Skill {name} of the "
                                   f"benchmark.\n---\n\nDo it (revision {revision}).\n")
    return path


def recipe(root: Path, name: str) -> Path:
    path = root / name
    path.mkdir(parents=True, exist_ok=True)
    (path / "recipe.yaml").write_text(
        f"name: {name}\ndescription: Counts words.\nexecution: sync\nenvironment: shell\n"
        "entrypoint: run.sh\ninputs:\n  path: {type: path, required: true}\n"
        "result: A number on stdout.\neffects: {filesystem: read, network: false}\n")
    (path / "run.sh").write_text("#!/bin/sh\nwc -w\n")
    (path / "run.sh").chmod(0o755)
    return path


def changes(agent: int, src: Path) -> list[list[str]]:
    """The agent's changes, each a librarian command line, on its own items only."""
    a, b, c, r = (f"a{agent}-one", f"a{agent}-two", f"a{agent}-three", f"a{agent}-tool")
    return [["retain", str(skill(src, a))], ["retain", str(skill(src, b))],
            ["retain", str(recipe(src, r))], ["revise", a, str(skill(src / "v2", a, 1))],
            ["hide", b], ["show", b], ["expose", r], ["withdraw", r], ["retire", a],
            ["retain", str(skill(src, c))]]


def publish_with_git(clone: Path, tries: int = 100) -> tuple[subprocess.CompletedProcess[str],
                                                             int]:
    """``git pull --rebase && git push``, again while the push is rejected; a failed pull
    (a conflict) is aborted and reported."""
    for attempt in range(1, tries + 1):
        pulled = run(["git", "pull", "--rebase", "-q"], clone)
        if pulled.returncode != 0:
            run(["git", "rebase", "--abort"], clone)
            return pulled, attempt
        pushed = run(["git", "push", "-q", "origin", "main"], clone)
        if pushed.returncode == 0:
            return pushed, attempt
    return pushed, tries


def agent_loop(agent: int, clone: Path, work: Path, count: int, mode: str,
               out: list[tuple[int, float, int]], errors: list[str]) -> None:
    """(exit code, seconds, tries) of each publish after each change; failures' messages."""
    for step in changes(agent, work / f"src{agent}")[:count]:
        must([*LIBRARIAN, *step], clone)
        start = time.perf_counter()
        if mode == "git":
            done, tries = publish_with_git(clone)
        else:
            done = run([*LIBRARIAN, "sync", "--json"], clone)
            tries = json.loads(done.stdout)["tries"] if done.returncode == 0 else 0
        seconds = time.perf_counter() - start
        out.append((done.returncode if mode == "sync" or done.returncode == 0 else 3,
                    seconds, tries))
        if done.returncode != 0:
            errors.append((done.stderr.strip().splitlines() or ["?"])[-1][:200])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--changes", type=int, default=10, choices=range(1, 11))
    parser.add_argument("--gate", action="store_true")
    parser.add_argument("--mode", choices=("sync", "git"), default="sync")
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-sync-"))
    try:
        base = work / "srv"
        base.mkdir()
        must([*LIBRARIAN, "init", str(work / "seed"), "--name", "team"], work)
        must(["git", "init", "--bare", "-q", "-b", "main", str(base / "team.git")], work)
        must(["git", "push", "-q", str(base / "team.git"), "main"], work / "seed")
        if args.gate:
            must([*LIBRARIAN, "hooks", "install", "--server"], base / "team.git")
        with daemon(base) as url:
            clones = []
            for n in range(args.agents):
                must([*LIBRARIAN, "clone", f"{url}/team.git", str(work / f"c{n}")], work)
                clones.append(work / f"c{n}")
            results: list[tuple[int, float, int]] = []
            errors: list[str] = []
            threads = [threading.Thread(target=agent_loop, args=(
                n, clones[n], work, args.changes, args.mode, results, errors))
                       for n in range(args.agents)]
            start = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall = time.perf_counter() - start
            tip = must(["git", "rev-list", "--count", "main"], base / "team.git").strip()
            checked = run([*LIBRARIAN, "check", "--commit", "main"], base / "team.git")
        ok = sorted(seconds for code, seconds, _ in results if code == 0)
        p95 = ok[min(len(ok) - 1, int(0.95 * len(ok)))] if ok else float("nan")
        print(f"mode {args.mode}, agents {args.agents}, changes each {args.changes}, "
              f"gate {args.gate}, load average {os.getloadavg()[0]:.1f}")
        print(f"published {len(ok)}/{len(results)} (commits on the host: {tip}, "
              f"including init); conflicts (sync: exit 3; git: a failed pull) "
              f"{sum(code == 3 for code, _, _ in results)}; other failures "
              f"{sum(code not in (0, 3) for code, _, _ in results)}")
        print(f"tries per publish: mean {statistics.mean(t for c, _, t in results if c == 0):.2f}, "
              f"max {max((t for c, _, t in results if c == 0), default=0)}")
        print(f"publish latency: median {statistics.median(ok):.2f} s, p95 {p95:.2f} s; "
              f"wall {wall:.1f} s; check of the host's tip: exit {checked.returncode}")
        for error in sorted(set(errors)):
            print(f"failed sync: {error}")
    finally:
        if args.keep:
            shutil.copytree(work, args.keep, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
