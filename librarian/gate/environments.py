"""Whether a recipe's declared environment is available on this machine, and how to start
a recipe in it.

- shell: a POSIX shell (``/bin/sh``, else ``sh`` on PATH);
- python: the interpreter librarian itself runs on (``sys.executable``);
- docker: a ``docker`` client on PATH *and* a daemon answering ``docker info`` in time;
- wasm: the ``wasmtime`` package (the ``wasm`` extra), run in the run's own python
  process by ``wasmrun.py``; else one of wasmtime, wasmer or wasmedge on PATH.

Availability is probed once per process (a docker probe costs a round trip to the daemon).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from librarian.core.manifests import RecipeEffects, RecipeManifest

DOCKER_PROBE_SECONDS = 5.0
WASM_RUNTIMES = ("wasmtime", "wasmer", "wasmedge")
WASM_INSTALL = "pip install 'agent-librarian[wasm]'"
#: Image a docker recipe's entrypoint runs in when the entrypoint is not a Dockerfile.
DOCKER_DEFAULT_IMAGE = "alpine:3"
#: Where the recipe directory is mounted (read-only) inside a container.
CONTAINER_RECIPE_DIR = "/recipe"
CONTAINER_WORK_DIR = "/work"
#: Containers are named ``librarian-<run id>``.
CONTAINER_PREFIX = "librarian-"


@dataclass(frozen=True, slots=True)
class Availability:
    available: bool
    reason: str | None = None  # why not, e.g. "docker is not available"
    program: str | None = None  # the interpreter or runtime that will be used


@functools.cache
def environment_availability(environment: str) -> Availability:
    if environment == "shell":
        shell = "/bin/sh" if os.access("/bin/sh", os.X_OK) else shutil.which("sh")
        if shell is None:
            return Availability(False, "no POSIX shell (sh) is available")
        return Availability(True, program=shell)
    if environment == "python":
        if sys.executable and os.access(sys.executable, os.X_OK):
            return Availability(True, program=sys.executable)
        return Availability(False, "no python interpreter is available")
    if environment == "docker":
        return _docker()
    if environment == "wasm":
        if wasmtime_importable():
            return Availability(True, program=sys.executable)  # in process: wasmrun.py
        for runtime in WASM_RUNTIMES:
            found = shutil.which(runtime)
            if found is not None:
                return Availability(True, program=found)
        return Availability(False, "no wasm runtime: neither the wasmtime package (install "
                            f"it with {WASM_INSTALL}) nor a wasmtime, wasmer or wasmedge "
                            "command is available")
    return Availability(False, f"unknown environment {environment!r}")


def wasmtime_importable() -> bool:
    """Whether the ``wasmtime`` package (the ``wasm`` extra) is installed."""
    return importlib.util.find_spec("wasmtime") is not None


def _docker() -> Availability:
    client = shutil.which("docker")
    if client is None:
        return Availability(False, "docker is not available (no docker client on PATH)")
    try:
        probe = subprocess.run(
            [client, "info", "--format", "{{.ServerVersion}}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=DOCKER_PROBE_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Availability(False, "docker is not available (the daemon did not answer)")
    except OSError as exc:
        return Availability(False, f"docker is not available ({exc.strerror})")
    if probe.returncode != 0:
        return Availability(False, "docker is not available (no daemon is running)")
    return Availability(True, program=client)


def container_name(run_id: str) -> str:
    """The name a docker run's container gets, so it can be killed by name."""
    return f"{CONTAINER_PREFIX}{run_id}"


def command_for(
    manifest: RecipeManifest,
    program: str,
    recipe_dir: Path,
    work_dir: Path,
    env: dict[str, str],
    *,
    run_id: str,
) -> list[str]:
    """The argv that starts ``manifest``'s entrypoint from ``recipe_dir`` (read-only)."""
    entry = recipe_dir.joinpath(*manifest.entrypoint.split("/"))
    if manifest.environment == "shell":
        return [program, str(entry)]
    if manifest.environment == "python":
        # -s: no user site-packages; -E: ignore PYTHON* variables (the env is scrubbed anyway).
        return [program, "-s", "-E", str(entry)]
    if manifest.environment == "docker":
        return docker_command(manifest, program, recipe_dir, work_dir, env, run_id=run_id,
                              user=(os.getuid(), os.getgid()))
    return _wasm_command(program, entry, work_dir, env)


def docker_command(
    manifest: RecipeManifest,
    program: str,
    recipe_dir: Path,
    work_dir: Path,
    env: dict[str, str],
    *,
    run_id: str,
    user: tuple[int, int],
) -> list[str]:
    """``docker run`` for a recipe (a pure function of its arguments).

    The container is named ``librarian-<run id>`` (a timeout kills it by name), runs as
    ``user`` (the caller's uid:gid, so what it writes to ``/work`` is the caller's), sees
    the recipe read-only at ``/recipe`` and its working directory at ``/work``, has no
    network unless the recipe declares it, and gets only the ``LIBRARIAN_*`` variables.
    Host paths given as ``path`` inputs are not mounted: the gate refuses docker recipes
    that declare any (see ``path_input_problem``)."""
    network = _network(manifest.effects)
    uid, gid = user
    argv = [program, "run", "--rm", "-i", "--name", container_name(run_id),
            "--user", f"{uid}:{gid}", "--network", "bridge" if network else "none",
            "-v", f"{recipe_dir}:{CONTAINER_RECIPE_DIR}:ro",
            "-v", f"{work_dir}:{CONTAINER_WORK_DIR}", "-w", CONTAINER_WORK_DIR]
    for key, value in sorted(env.items()):
        if key.startswith("LIBRARIAN_INPUT_"):
            argv += ["-e", f"{key}={value}"]
    argv += ["-e", f"LIBRARIAN_RECIPE_DIR={CONTAINER_RECIPE_DIR}",
             "-e", f"LIBRARIAN_RUN_ID={run_id}", "-e", f"HOME={CONTAINER_WORK_DIR}"]
    entry = f"{CONTAINER_RECIPE_DIR}/{manifest.entrypoint}"
    return [*argv, DOCKER_DEFAULT_IMAGE, "/bin/sh", entry]


def path_input_problem(manifest: RecipeManifest) -> str | None:
    """Why the recipe cannot run in its environment because of its ``path`` inputs: a
    docker container sees none of the host's paths, so a docker recipe may not declare
    any (``None`` when there is no such problem)."""
    if manifest.environment != "docker":
        return None
    paths = [spec.name for spec in manifest.inputs if spec.type == "path"]
    if not paths:
        return None
    return (f"docker recipes cannot take path inputs ({', '.join(paths)}): the container "
            "does not see host paths")


def wasm_in_process(program: str) -> bool:
    """Whether a wasm recipe runs through the wasmtime package (else a CLI runtime)."""
    return program == sys.executable


def wasm_host_paths() -> list[str]:
    """What the python process hosting a module reads besides the interpreter: the
    runner script and the wasmtime package."""
    paths = [str(Path(__file__).with_name("wasmrun.py"))]
    spec = importlib.util.find_spec("wasmtime")
    if spec is not None:
        paths += list(spec.submodule_search_locations or ())
    return paths


def wasm_command(program: str, entry: Path, preopen: Sequence[tuple[str, str, bool]],
                 env: Mapping[str, str], *, timeout: int, memory_bytes: int) -> list[str]:
    """``python -I wasmrun.py CONFIG``: the module with only ``preopen`` (host, guest,
    writable) visible, the ``LIBRARIAN_*`` variables, a timeout and a memory cap."""
    config = {"module": str(entry), "preopen": [list(p) for p in preopen],
              "env": {k: v for k, v in env.items() if k.startswith("LIBRARIAN_")},
              "timeout": timeout, "memory_bytes": memory_bytes}
    script = Path(__file__).with_name("wasmrun.py")
    return [program, "-I", str(script), json.dumps(config, separators=(",", ":"))]


def _wasm_command(program: str, entry: Path, work_dir: Path, env: dict[str, str]) -> list[str]:
    runtime = Path(program).name
    pairs = [f"{k}={v}" for k, v in sorted(env.items()) if k.startswith("LIBRARIAN_")]
    if runtime == "wasmtime":
        argv = [program, "run", f"--dir={work_dir}::."]
        for pair in pairs:
            argv += ["--env", pair]
        return [*argv, str(entry)]
    if runtime == "wasmer":
        argv = [program, "run", f"--mapdir=.:{work_dir}"]
        for pair in pairs:
            argv += ["--env", pair]
        return [*argv, str(entry)]
    argv = [program, f"--dir=.:{work_dir}"]
    for pair in pairs:
        argv += ["--env", pair]
    return [*argv, str(entry)]


def _network(effects: RecipeEffects | None) -> bool:
    return bool(effects is not None and effects.network)
