"""Running a recipe that passed the gate: sync in this process, async under a detached
supervisor. The run's records (``runs/<run-id>/``, statuses, receipts) are ``runs.py``.

The process itself runs in a scratch directory outside the library:

- ``recipe/``: the recipe's *committed* files (the approved digest), read-only;
- ``work/``: its working directory (and ``HOME``); ``tmp/``: its ``TMPDIR``;
- a scrubbed environment: PATH, HOME, LANG, TMPDIR, LIBRARIAN_RECIPE_DIR, LIBRARIAN_RUN_ID
  and one ``LIBRARIAN_INPUT_<NAME>`` per input; the inputs also as one JSON object on stdin;
- its own process group, killed (SIGKILL) when the declared timeout passes, and when the
  entrypoint exits (nothing it started outlives the run); a docker run's container, which
  the client's death does not stop, is also killed by name (``librarian-<run id>``).

An async run's supervisor is ``python -I -m librarian.gate.runner RUN_DIR`` started in the run
directory, so nothing in the caller's directory is importable by it.

The library never prints: a sync run's output is copied into file objects the caller
passes (the command line passes its stdout and stderr).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import IO, Any, BinaryIO

from librarian.core.faults import crash_point
from librarian.core.fsutil import atomic_write
from librarian.core.model import ItemFile
from librarian.gate import confine, wasmrun
from librarian.gate.checks import (
    Target,
    approve_target,
    check_gate,
    input_environment,
    resolve_target,
)
from librarian.gate.enforcement import plan, wasm_preopens
from librarian.gate.environments import (
    command_for,
    container_name,
    environment_availability,
    wasm_command,
    wasm_in_process,
)
from librarian.gate.runs import (
    LAUNCH_GRACE_SECONDS,
    LAUNCHER_FILE,
    PID_FILE,
    SCRATCH_PREFIX,
    SPEC_FILE,
    RunRecord,
    finish_run,
    kill_container,
    kill_group,
    new_run_id,
    read_pid,
    read_record,
    remove_scratch,
    runs_dir,
    write_record,
)
from librarian.library import Library

DEFAULT_TIMEOUT = 600  # seconds, for a recipe that declares none
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
IN_PROCESS_GRACE = 5.0  # seconds a wasm module has past its timeout to stop itself


# -- starting a run -------------------------------------------------------------------


def start_run(
    library: Library,
    name: str,
    raw_args: Mapping[str, str],
    *,
    run_async: bool = False,
    approve_now: bool = False,
    cwd: Path | None = None,
    stdout: BinaryIO | None = None,
    stderr: BinaryIO | None = None,
) -> RunRecord:
    """Gate, then run: sync (returns the finished record; output also copied to ``stdout``
    and ``stderr`` as it comes) or async (returns at once with a ``launched`` record). A
    recipe declaring ``execution: async`` always launches async."""
    target = resolve_target(library, name)
    inputs = check_gate(library, target, raw_args, cwd=cwd or Path.cwd(),
                        approve_now=approve_now)
    if approve_now:
        approve_target(library, target)
    mode = "async" if run_async or target.manifest.execution == "async" else "sync"
    run_dir, record = _prepare(library, target, inputs, mode)
    if mode == "async":
        return _launch(library, run_dir, record)
    return execute(library, run_dir, record, stdout=stdout, stderr=stderr)


def _prepare(library: Library, target: Target, inputs: Mapping[str, object],
             mode: str) -> tuple[Path, RunRecord]:
    """Create the run directory, its scratch directory and its spec and record; when any
    step fails, remove both directories again (no half-prepared run is left behind)."""
    run_id = new_run_id()
    run_dir = runs_dir(library) / run_id
    run_dir.mkdir(parents=True)
    scratch: Path | None = None
    try:
        scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{run_id}-"))
        record = _write_spec(library, target, inputs, mode, run_id, run_dir, scratch)
    except BaseException:
        if scratch is not None:
            remove_scratch(scratch)
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    return run_dir, record


def _write_spec(library: Library, target: Target, inputs: Mapping[str, object], mode: str,
                run_id: str, run_dir: Path, scratch: Path) -> RunRecord:
    recipe_dir, work, tmp = scratch / "recipe", scratch / "work", scratch / "tmp"
    _materialise_read_only(recipe_dir, target.files)
    work.mkdir()
    tmp.mkdir()
    stdin = scratch / "stdin.json"
    stdin.write_bytes(json.dumps(dict(inputs), sort_keys=True).encode())
    env = {
        "PATH": os.environ.get("PATH") or DEFAULT_PATH,
        "HOME": str(work),
        "LANG": os.environ.get("LANG") or "C.UTF-8",
        "TMPDIR": str(tmp),
        "LIBRARIAN_RECIPE_DIR": str(recipe_dir),
        "LIBRARIAN_RUN_ID": run_id,
        **input_environment(inputs),
    }
    program = environment_availability(target.manifest.environment).program or ""
    timeout = target.manifest.timeout or DEFAULT_TIMEOUT
    in_process = target.manifest.environment == "wasm" and wasm_in_process(program)
    if in_process:
        entry = recipe_dir.joinpath(*target.manifest.entrypoint.split("/"))
        argv = wasm_command(program, entry, wasm_preopens(target.manifest, inputs, work), env,
                            timeout=timeout, memory_bytes=target.policy.run_memory_mb << 20)
    else:
        argv = command_for(target.manifest, program, recipe_dir, work, env, run_id=run_id)
    confinement = plan(target.manifest, target.policy, recipe_dir=recipe_dir, work=work,
                       tmp=tmp, inputs=inputs, program=program)
    spec: dict[str, object] = {
        "library": str(library.root), "repo": str(library.repo) if library.repo else None,
        "argv": argv, "env": env, "cwd": str(work),
        "scratch": str(scratch), "stdin": str(stdin), "confine": confinement.policy}
    if in_process:  # the module is stopped at its timeout; the group is killed after
        spec["timeout_exit"] = wasmrun.TIMEOUT_EXIT
    if target.manifest.environment == "docker":
        # A timeout or a kill of the client does not stop the container: kill it by name.
        spec["container"] = {"client": program, "name": container_name(run_id)}
    atomic_write(run_dir / SPEC_FILE, json.dumps(spec, indent=1).encode())
    record = RunRecord(
        run_id=run_id, name=target.name, entry=target.entry, recipe=target.item.path,
        digest=target.digest, mode=mode, status="launched" if mode == "async" else "running",
        started=round(time.time(), 3), timeout=timeout,
        pid=None if mode == "async" else os.getpid(), enforced=dict(confinement.enforced),
    )
    if mode == "async":
        # Who may still start the supervisor: once it is dead, a launched run that has
        # no supervisor is lost at once rather than after the whole grace period.
        (run_dir / LAUNCHER_FILE).write_text(str(os.getpid()))
    write_record(run_dir, record)
    return record


def _materialise_read_only(root: Path, files: tuple[ItemFile, ...]) -> None:
    directories = {root}
    root.mkdir()
    for item_file in files:
        path = root.joinpath(*item_file.path.split("/"))
        for parent in reversed(path.parents):
            if root in parent.parents and parent not in directories:
                parent.mkdir()
                directories.add(parent)
        path.write_bytes(item_file.data)
        path.chmod(0o555 if item_file.executable else 0o444)
    for directory in sorted(directories, key=lambda p: len(p.parts), reverse=True):
        directory.chmod(0o555)


def _launch(library: Library, run_dir: Path, record: RunRecord) -> RunRecord:
    """Start the detached supervisor; it forks once more (so no process of ours waits on
    it), writes its pid and returns at once.

    The supervisor runs isolated (``-I``: no current directory or script directory on
    ``sys.path``, no ``PYTHON*`` variables, no user site-packages) from the run directory,
    so nothing in the caller's directory (a ``json.py``, say) is imported by it. The
    installed librarian stays importable: site-packages, and its ``.pth`` files, still load.
    """
    crash_point("run-before-supervisor")
    with (run_dir / "supervisor.log").open("wb") as log:
        try:
            starter = subprocess.Popen(
                supervisor_argv(run_dir), cwd=run_dir,
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True, close_fds=True,
            )
        except OSError as exc:
            return finish_run(library, run_dir, record, "failed", None,
                               reason=f"cannot start the run's supervisor: {exc.strerror}")
        try:
            code = starter.wait(timeout=LAUNCH_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            starter.kill()
            code = starter.wait()
    pid = read_pid(run_dir)
    if code != 0 or pid is None:
        return finish_run(library, run_dir, record, "failed", None,
                           reason="the run's supervisor did not start (see supervisor.log)")
    # The launch receipt describes the launch, whatever the run has done since.
    return replace(record, pid=pid)


def supervisor_argv(run_dir: Path) -> list[str]:
    """The command that starts a run's supervisor (isolated: see ``_launch``)."""
    return [sys.executable, "-I", "-m", "librarian.gate.runner", str(run_dir)]


# -- executing ------------------------------------------------------------------------


def execute(
    library: Library,
    run_dir: Path,
    record: RunRecord,
    *,
    stdout: BinaryIO | None = None,
    stderr: BinaryIO | None = None,
) -> RunRecord:
    """Run the prepared process to its end and record the result (sync runs and the
    supervisor both come here)."""
    spec = json.loads((run_dir / SPEC_FILE).read_bytes())
    record = replace(record, status="running", pid=os.getpid())
    write_record(run_dir, record)
    begun = time.monotonic()
    with (
        Path(spec["stdin"]).open("rb") as stdin_file,
        (run_dir / "stdout").open("wb") as out_file,
        (run_dir / "stderr").open("wb") as err_file,
    ):
        argv, preexec = confined_start([str(a) for a in spec["argv"]], spec.get("confine"))
        try:
            process = subprocess.Popen(
                argv, cwd=spec["cwd"], env=dict(spec["env"]),
                stdin=stdin_file,
                stdout=subprocess.PIPE if stdout is not None else out_file,
                stderr=subprocess.PIPE if stderr is not None else err_file,
                start_new_session=True, close_fds=True, preexec_fn=preexec,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            why = (f"cannot start the entrypoint: {exc.strerror}" if isinstance(exc, OSError)
                   else "the run could not be confined to its declared effects")
            return finish_run(library, run_dir, record, "failed", None, reason=why,
                               duration=time.monotonic() - begun)
        record = replace(record, process_group=process.pid)
        write_record(run_dir, record)
        pumps = [
            _pump(pipe, file, sink)
            for pipe, file, sink in ((process.stdout, out_file, stdout),
                                     (process.stderr, err_file, stderr))
            if pipe is not None and sink is not None
        ]
        timed_out = False
        # A wasm module stops itself at its timeout (epoch interruption); its process
        # group is killed a little later if it has not.
        grace = IN_PROCESS_GRACE if "timeout_exit" in spec else 0.0
        try:
            try:
                process.wait(timeout=record.timeout + grace)
            except subprocess.TimeoutExpired:
                timed_out = True
            kill_group(process.pid)
            if timed_out:
                kill_container(spec)
            process.wait()
            for pump in pumps:
                pump.join(timeout=5)
        except BaseException:
            kill_group(process.pid)
            kill_container(spec)
            process.wait()
            finish_run(library, run_dir, record, "failed", None, reason="interrupted",
                        duration=time.monotonic() - begun)
            raise
    duration = time.monotonic() - begun
    stopped = spec.get("timeout_exit")  # how a wasm module stopped at its timeout exits
    if stopped is not None and process.returncode == stopped and duration >= record.timeout:
        timed_out = True
    if timed_out:
        return finish_run(library, run_dir, record, "timed_out", None, duration=duration,
                           reason=f"killed after the declared timeout of {record.timeout} s")
    code = process.returncode
    if code < 0:  # killed by a signal, as a shell reports it
        return finish_run(library, run_dir, record, "failed", 128 - code, duration=duration,
                           reason=f"killed by signal {-code}")
    return finish_run(library, run_dir, record, "succeeded" if code == 0 else "failed", code,
                       duration=duration)


def confined_start(argv: list[str], policy: Mapping[str, Any] | None
                   ) -> tuple[list[str], Callable[[], None] | None]:
    """How to start ``argv`` confined to ``policy``: in the forked child before ``exec``
    (``preexec_fn``) when this process has one thread, else through the re-exec helper,
    since code run between fork and exec in a threaded process may deadlock
    (docs/decisions.md, "Confining a run")."""
    if not policy:
        return argv, None
    if threading.active_count() == 1 and _one_thread():
        return argv, functools.partial(confine.apply, dict(policy))
    return confine.helper_argv(policy, argv), None


def _one_thread() -> bool:
    try:
        return sum(1 for _ in Path("/proc/self/task").iterdir()) == 1
    except OSError:
        return False


def _pump(pipe: IO[bytes], file: BinaryIO, sink: BinaryIO) -> threading.Thread:
    def copy() -> None:
        sink_open = True
        fd = pipe.fileno()
        while chunk := os.read(fd, 65536):
            file.write(chunk)
            if sink_open:
                try:
                    sink.write(chunk)
                    sink.flush()
                except (OSError, ValueError):  # the reader went away; keep recording
                    sink_open = False
        pipe.close()

    thread = threading.Thread(target=copy, daemon=True)
    thread.start()
    return thread


# -- the supervisor process -----------------------------------------------------------


def _supervise(run_dir: Path) -> int:
    """``python -m librarian.gate.runner RUN_DIR``: fork, publish the child's pid, exit; the
    child runs the recipe to its end and records the result."""
    child = os.fork()
    if child:
        atomic_write(run_dir / PID_FILE, str(child).encode())
        return 0
    spec = json.loads((run_dir / SPEC_FILE).read_bytes())
    record = read_record(run_dir)
    if record is not None:
        repo = spec.get("repo")  # a library in a folder of that repository
        execute(Library(Path(spec["library"]), (), Path(repo) if repo else None), run_dir,
                record)
    return 0


if __name__ == "__main__":
    raise SystemExit(_supervise(Path(sys.argv[1])))
