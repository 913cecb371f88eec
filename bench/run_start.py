"""What confining a run costs at its start: paired runs with and without confinement.

    python bench/run_start.py [--pairs 200] [--environment shell|python]

A run's process is started as ``execute`` starts it (``subprocess.Popen`` in a new
session, from a scratch directory, the entrypoint running to its end) for the heaviest
declaration, ``effects: {filesystem: none, network: false}``, three ways, interleaved in
random order within each pair so that load on the machine hits every variant alike:

- ``plain``: no confinement (what every shell or python run was before);
- ``preexec``: the confinement applied between fork and exec (this process has one
  thread, as the command line and the async supervisor have);
- ``helper``: the re-exec helper (``python -I -S confine.py``), used when the caller has
  threads (the MCP server).

Each variant's time includes building the plan (``enforcement.plan``). Reported: the
median, 10th and 90th percentiles of the paired differences against ``plain``, in ms
(the 10th is the closest to an idle machine's figure on a shared one).
Benchmarks are never part of the test suite.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from librarian.core.manifests import RecipeEffects, RecipeManifest
from librarian.core.model import Policy
from librarian.gate import confine
from librarian.gate.enforcement import kernel_support, plan
from librarian.gate.environments import environment_availability


def manifest(environment: str) -> RecipeManifest:
    entry = "run.sh" if environment == "shell" else "run.py"
    return RecipeManifest(name="bench", description="Starts and ends.", execution="sync",
                          environment=environment, entrypoint=entry,
                          effects=RecipeEffects("none", False))


def start(variant: str, environment: str, scratch: Path) -> float:
    recipe, work, tmp = scratch / "recipe", scratch / "work", scratch / "tmp"
    program = environment_availability(environment).program or ""
    entry = recipe / ("run.sh" if environment == "shell" else "run.py")
    argv = [program, str(entry)] if environment == "shell" else [program, "-s", "-E", str(entry)]
    began = time.perf_counter()
    preexec = None
    if variant != "plain":
        policy = plan(manifest(environment), Policy(), recipe_dir=recipe, work=work, tmp=tmp,
                      inputs={}, program=program).policy
        assert policy is not None
        if variant == "preexec":
            preexec = lambda: confine.apply(policy)  # noqa: E731
        else:
            argv = confine.helper_argv(policy, argv)
    process = subprocess.Popen(argv, cwd=work, env={"PATH": "/usr/bin:/bin", "HOME": str(work)},
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               start_new_session=True, close_fds=True, preexec_fn=preexec)
    code = process.wait()
    assert code == 0, (variant, code)
    return (time.perf_counter() - began) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--environment", choices=("shell", "python"), default="shell")
    args = parser.parse_args()
    support = kernel_support()
    print(f"kernel: {support}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as directory:
        scratch = Path(directory)
        for name in ("recipe", "work", "tmp"):
            (scratch / name).mkdir()
        (scratch / "recipe" / "run.sh").write_text("exit 0\n")
        (scratch / "recipe" / "run.py").write_text("pass\n")
        variants = ("plain", "preexec", "helper")
        for variant in variants:  # warm up
            start(variant, args.environment, scratch)
        samples: dict[str, list[float]] = {v: [] for v in variants}
        for _ in range(args.pairs):
            order = list(variants)
            random.shuffle(order)
            for variant in order:
                samples[variant].append(start(variant, args.environment, scratch))
    plain = samples["plain"]
    print(f"{args.environment}, {args.pairs} pairs; plain start median "
          f"{statistics.median(plain):.2f} ms")
    for variant in ("preexec", "helper"):
        differences = sorted(c - p for c, p in zip(samples[variant], plain, strict=True))
        p10, p90 = (differences[int(q * (len(differences) - 1))] for q in (0.1, 0.9))
        print(f"{variant:8} median {statistics.median(samples[variant]):6.2f} ms; "
              f"added: median {statistics.median(differences):+.2f} ms, "
              f"p10 {p10:+.2f} ms, p90 {p90:+.2f} ms")


if __name__ == "__main__":
    main()
