"""Run records and reading them back: every run is recorded under
``.git/librarian/runs/<run-id>/``, and this module reads, refreshes, lists, waits on, ends
and reports runs (starting and executing them is ``runner.py``).

A run directory holds ``spec.json`` (what to start), ``record.json`` (status, exit code,
times, the pid that owns the run; replaced atomically), ``stdout`` and ``stderr``.

Status: ``launched`` (async, supervisor starting) → ``running`` → ``succeeded`` (exit 0) |
``failed`` | ``timed_out``; ``lost`` when the record says running but the process that owns
it is gone. Ending a run (here, so that a reader can end a lost one) writes the final
record, ledgers it once and removes its scratch directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from librarian.core.fsutil import atomic_write
from librarian.core.receipts import RunReceipt, RunResultReceipt
from librarian.errors import UsageError
from librarian.gate.ledger import LedgerEntry, append
from librarian.library import Library

RUNS_DIR = "runs"
RECORD_FILE = "record.json"
SPEC_FILE = "spec.json"
PID_FILE = "supervisor.pid"
LEDGERED_MARK = "ledgered"
OUTPUT_LIMIT = 1024 * 1024  # bytes of stdout/stderr put into a run_result document
TERMINAL = frozenset({"succeeded", "failed", "timed_out", "lost"})
LAUNCH_GRACE_SECONDS = 30.0
#: how long a launched run may wait for its supervisor once the command that launched it
#: is dead (the supervisor, if it was started, publishes its pid within milliseconds)
ORPHANED_LAUNCH_SECONDS = 2.0
LAUNCHER_FILE = "launcher.pid"
SCRATCH_PREFIX = "librarian-run-"
CONTAINER_KILL_SECONDS = 10.0  # at most this long waiting for `docker kill`
_RUN_ID_RE = re.compile(r"[0-9]{8}T[0-9]{6}-[0-9a-f]{8}")


@dataclass(frozen=True, slots=True)
class RunRecord:
    run_id: str
    name: str  # the tool or recipe name as given
    entry: str  # tool | recipe
    recipe: str  # library path of the recipe
    digest: str
    mode: str  # sync | async
    status: str  # launched | running | succeeded | failed | timed_out | lost
    started: float
    timeout: int
    exit_code: int | None = None
    ended: float | None = None
    duration: float | None = None
    pid: int | None = None  # the process that owns the run (librarian or the supervisor)
    reason: str | None = None
    process_group: int | None = None  # the recipe's process group, once started
    #: what was enforced of the declared effects (``enforcement.plan``'s document)
    enforced: dict[str, Any] | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


def runs_dir(library: Library) -> Path:
    return library.state_dir / RUNS_DIR


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:8]


# -- records --------------------------------------------------------------------------


def write_record(run_dir: Path, record: RunRecord) -> None:
    atomic_write(run_dir / RECORD_FILE, json.dumps(asdict(record), indent=1).encode())


def read_record(run_dir: Path) -> RunRecord | None:
    try:
        doc = json.loads((run_dir / RECORD_FILE).read_bytes())
        return RunRecord(**doc)
    except (OSError, ValueError, TypeError):
        return None


def read_pid(run_dir: Path) -> int | None:
    try:
        return int((run_dir / PID_FILE).read_text().strip())
    except (OSError, ValueError):
        return None


def _owner_alive(pid: int, run_dir: Path, mode: str) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path(f"/proc/{pid}")
    try:  # a zombie nobody reaped (pid 1 in some containers) is dead
        if proc.joinpath("stat").read_text().rsplit(") ", 1)[1].startswith("Z"):
            return False
    except (OSError, IndexError):
        return True  # no /proc: trust kill(pid, 0)
    if mode != "async":
        return True
    # Guard against pid reuse: the supervisor's command line names its run directory.
    try:
        cmdline = proc.joinpath("cmdline").read_bytes()
    except OSError:
        return True
    return str(run_dir).encode() in cmdline


def _launcher_alive(run_dir: Path) -> bool:
    """Whether the command that launched an async run may still start its supervisor (a
    run without the file, from an older librarian, is given the whole grace period)."""
    try:
        launcher = int((run_dir / LAUNCHER_FILE).read_text().strip())
    except (OSError, ValueError):
        return True
    return _owner_alive(launcher, run_dir, "sync")


def refresh(library: Library, run_dir: Path) -> RunRecord | None:
    """The run's record; a run whose owner died without recording an end becomes ``lost``."""
    record = read_record(run_dir)
    if record is None or record.terminal:
        return record
    pid = record.pid if record.pid is not None else read_pid(run_dir)
    if pid is None:
        grace = LAUNCH_GRACE_SECONDS if _launcher_alive(run_dir) else ORPHANED_LAUNCH_SECONDS
        if time.time() - record.started < grace:
            return record
    elif _owner_alive(pid, run_dir, record.mode):
        return record
    again = read_record(run_dir)  # the owner is gone: it can no longer write the end
    if again is None or again.terminal:
        return again
    if again.process_group is not None:
        _kill_orphans(again.process_group, again.run_id)
    kill_container(_read_spec(run_dir))
    return finish_run(library, run_dir, again, "lost", None,
                       reason="the process running it died without recording an end")


def _kill_orphans(pgid: int, run_id: str) -> None:
    """Kill what a lost run left running, only if that process group is still this run's
    (its leader's environment names the run), so a reused id is never hit."""
    try:
        environ = Path(f"/proc/{pgid}/environ").read_bytes().split(b"\0")
    except OSError:
        return
    if f"LIBRARIAN_RUN_ID={run_id}".encode() in environ:
        kill_group(pgid)


def run_dir_of(library: Library, run_id: str) -> Path:
    if not _RUN_ID_RE.fullmatch(run_id):
        raise UsageError(f"{run_id!r} is not a run id", hint="`librarian runs` lists them")
    path = runs_dir(library) / run_id
    if not (path / RECORD_FILE).is_file():
        raise UsageError(f"no run {run_id} in this library", hint="`librarian runs` lists them")
    return path


def list_runs(library: Library) -> list[RunRecord]:
    """Every recorded run, newest first."""
    try:
        names = sorted((p.name for p in runs_dir(library).iterdir()), reverse=True)
    except FileNotFoundError:
        return []
    records = []
    for name in names:
        if _RUN_ID_RE.fullmatch(name):
            record = refresh(library, runs_dir(library) / name)
            if record is not None:
                records.append(record)
    records.sort(key=lambda r: (r.started, r.run_id), reverse=True)
    return records


def wait_run(library: Library, run_id: str, timeout: float | None = None) -> RunRecord:
    """Block until the run ends (or ``timeout`` passes: the record as it stands then)."""
    run_dir = run_dir_of(library, run_id)
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.02
    while True:
        record = refresh(library, run_dir)
        if record is None:
            raise UsageError(f"the record of run {run_id} is unreadable")
        if record.terminal or (deadline is not None and time.monotonic() >= deadline):
            return record
        time.sleep(delay)
        delay = min(delay * 1.5, 0.25)


# -- ending a run ---------------------------------------------------------------------


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_container(spec: Mapping[str, Any] | None) -> None:
    """Best effort, bounded in time: ``docker kill`` the run's container, if it has one.
    Killing the docker client's process group does not stop the container itself."""
    container = spec.get("container") if spec is not None else None
    if not isinstance(container, dict):
        return
    client, name = container.get("client"), container.get("name")
    if not isinstance(client, str) or not isinstance(name, str) or not client or not name:
        return
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run([client, "kill", name], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=CONTAINER_KILL_SECONDS, check=False)


def finish_run(library: Library, run_dir: Path, record: RunRecord, status: str,
                exit_code: int | None, *, reason: str | None = None,
                duration: float | None = None) -> RunRecord:
    ended = round(time.time(), 3)
    if duration is None:
        duration = max(0.0, ended - record.started)
    final = replace(record, status=status, exit_code=exit_code, ended=ended,
                    duration=round(duration, 3), reason=reason)
    write_record(run_dir, final)
    _ledger_once(library, run_dir, final)
    _cleanup(run_dir)
    return final


def _ledger_once(library: Library, run_dir: Path, record: RunRecord) -> None:
    try:
        fd = os.open(run_dir / LEDGERED_MARK, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return
    os.close(fd)
    append(library, LedgerEntry(
        time=record.ended or time.time(), entry=record.entry, name=record.name,
        recipe=record.recipe, digest=record.digest, status=record.status,
        duration=record.duration, run_id=record.run_id, mode=record.mode,
        reason=record.reason,
    ))


def _read_spec(run_dir: Path) -> dict[str, Any] | None:
    try:
        spec = json.loads((run_dir / SPEC_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    return spec if isinstance(spec, dict) else None


def _cleanup(run_dir: Path) -> None:
    """Remove the run's scratch directory."""
    spec = _read_spec(run_dir)
    if spec is not None:
        remove_scratch(Path(str(spec.get("scratch", ""))))


def remove_scratch(scratch: Path) -> None:
    """Remove a run's scratch directory (the recipe copy is read-only: unlock it first);
    anything not named like one is left alone."""
    if not scratch.name.startswith(SCRATCH_PREFIX) or not scratch.is_dir():
        return
    for directory, subdirs, _ in os.walk(scratch):
        for sub in subdirs:
            with contextlib.suppress(OSError):
                (Path(directory) / sub).chmod(0o700)
    with contextlib.suppress(OSError):
        scratch.chmod(0o700)
    shutil.rmtree(scratch, ignore_errors=True)


# -- receipts -------------------------------------------------------------------------


def _read_output(path: Path) -> tuple[str, bool]:
    try:
        with path.open("rb") as handle:
            data = handle.read(OUTPUT_LIMIT + 1)
    except FileNotFoundError:
        return "", False
    return data[:OUTPUT_LIMIT].decode("utf-8", "replace"), len(data) > OUTPUT_LIMIT


def _common(record: RunRecord) -> dict[str, Any]:
    return {"run_id": record.run_id, "status": record.status, "entry": record.entry,
            "mode": record.mode, "started": record.started}


def launch_receipt(record: RunRecord) -> RunReceipt:
    """``run_launched``: the run exists and is on its way; not its completion, not its result."""
    return RunReceipt(kind="run_launched", name=record.name, path=record.recipe,
                   digest=record.digest, commit=None,
                   details={**_common(record), "pid": record.pid, "timeout": record.timeout,
                            "enforced": record.enforced},
                   reason=record.reason)


def result_receipt(library: Library, record: RunRecord) -> RunResultReceipt:
    """``run_result``: the terminal status and what the run produced (or, after a
    ``wait --timeout`` that expired, the status so far)."""
    run_dir = runs_dir(library) / record.run_id
    output, out_cut = _read_output(run_dir / "stdout")
    errors, err_cut = _read_output(run_dir / "stderr")
    return RunResultReceipt(kind="run_result", name=record.name, path=record.recipe,
                   digest=record.digest, commit=None,
                   details={**_common(record), "exit_code": record.exit_code,
                            "ended": record.ended, "duration": record.duration,
                            "timed_out": record.status == "timed_out",
                            "output_truncated": out_cut or err_cut,
                            "output_path": str(run_dir / "stdout"),
                            "enforced": record.enforced},
                            reason=record.reason, output=output, stderr=errors)
