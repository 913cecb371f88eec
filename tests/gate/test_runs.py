"""Running recipes for real: sync and async, shell and python, typed inputs, timeouts,
the scrubbed environment, lost runs and the usage ledger."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from support.helpers import cli, write

from librarian.agents.claude_manifests import GENERATED
from librarian.core.manifests import RecipeEffects, RecipeInput, RecipeManifest
from librarian.gate import checks as gate
from librarian.gate import runner
from librarian.gate.checks import approve
from librarian.gate.environments import (
    Availability,
    container_name,
    docker_command,
    path_input_problem,
)
from librarian.library.layout import Library
from librarian.ops.retention import retain

SHELL_ENV_SCRIPT = """#!/bin/sh
echo "count=$LIBRARIAN_INPUT_COUNT ratio=$LIBRARIAN_INPUT_RATIO loud=$LIBRARIAN_INPUT_LOUD"
echo "word=$LIBRARIAN_INPUT_WORD"
echo "stdin=$(cat)"
echo "pwd=$(pwd)"
echo "home=$HOME"
echo "recipe=$LIBRARIAN_RECIPE_DIR"
echo "secret=${SECRET_TOKEN:-none}"
echo "mode=$(stat -c %a "$LIBRARIAN_RECIPE_DIR") $(stat -c %a "$LIBRARIAN_RECIPE_DIR/run.sh")"
if touch "$LIBRARIAN_RECIPE_DIR/new" 2>/dev/null; then echo writable=yes; else echo writable=no; fi
echo oops >&2
exit "$LIBRARIAN_INPUT_CODE"
"""

PY_SCRIPT = """import json, os, sys
data = json.load(sys.stdin)
print(json.dumps({"stdin": data, "env": sorted(os.environ), "cwd": os.getcwd()}))
"""

TYPED_INPUTS = """inputs:
  count: {type: integer, required: true}
  ratio: {type: number, default: 0.5}
  loud: {type: boolean, default: false}
  word: {type: string, default: hello}
  code: {type: integer, default: 0}
"""


def make_recipe(base: Path, name: str, script: str, *, environment: str = "shell",
                entrypoint: str = "run.sh", inputs: str = "", timeout: int = 20,
                execution: str = "sync") -> Path:
    root = base / name
    write(root / "recipe.yaml",
          f"name: {name}\ndescription: Test recipe {name}.\nexecution: {execution}\n"
          f"environment: {environment}\nentrypoint: {entrypoint}\n{inputs}"
          f"result: Text on stdout.\neffects: {{filesystem: none, network: false}}\n"
          f"timeout: {timeout}\n")
    write(root / entrypoint, script, 0o755)
    return root


def retained(library: Path, sources: Path, name: str, script: str, **kw: object) -> Library:
    lib = Library(library, GENERATED)
    retain(lib, make_recipe(sources, name, script, **kw))  # type: ignore[arg-type]
    approve(lib, name)
    return lib



def test_sync_shell_run_with_typed_inputs_scrubbed_env_and_exit_code(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    retained(library, sources, "echo-env", SHELL_ENV_SCRIPT, inputs=TYPED_INPUTS)
    monkeypatch.setenv("SECRET_TOKEN", "hunter2-do-not-leak")
    result = cli(capsys, library, "run", "echo-env", "--arg", "count=3", "--arg", "loud=yes",
                 "--arg", "code=7", "--json")
    assert result.code == 7, result.err
    doc = result.json
    assert doc["kind"] == "run_result"
    assert doc["status"] == "failed" and doc["exit_code"] == 7
    assert doc["run_id"] and doc["duration"] is not None and doc["timed_out"] is False
    out = doc["output"]
    assert "count=3 ratio=0.5 loud=true" in out
    assert "word=hello" in out
    stdin = json.loads(out.split("stdin=", 1)[1].splitlines()[0])
    assert stdin == {"count": 3, "ratio": 0.5, "loud": True, "word": "hello", "code": 7}
    assert "secret=none" in out and "hunter2" not in out
    assert "mode=555 555" in out
    if os.geteuid() != 0:  # permission bits do not bind root (docs/execution.md)
        assert "writable=no" in out
    lines = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    assert lines["home"] == lines["pwd"]
    assert not lines["pwd"].startswith(str(library))
    assert not lines["recipe"].startswith(str(library))
    assert doc["stderr"] == "oops\n"
    # the scratch directory is gone after the run
    assert not Path(lines["recipe"]).exists()


def test_sync_run_streams_output_and_passes_exit_code(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    retained(library, sources, "echo-env", SHELL_ENV_SCRIPT, inputs=TYPED_INPUTS)
    result = cli(capsys, library, "run", "echo-env", "--arg", "count=1")
    assert result.code == 0, result.err
    assert "count=1 ratio=0.5 loud=false" in result.out
    assert "oops" in result.err


def test_python_recipe_gets_json_stdin_and_only_the_declared_environment(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    retained(library, sources, "py-echo", PY_SCRIPT, environment="python", entrypoint="main.py",
             inputs="inputs:\n  n: {type: integer, required: true}\n"
                    "  target: {type: path, required: true}\n")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-for-recipes")
    monkeypatch.chdir(sources)
    result = cli(capsys, library, "run", "py-echo", "--arg", "n=42", "--arg", "target=a.txt",
                 "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.json["output"])
    assert doc["stdin"] == {"n": 42, "target": str(sources / "a.txt")}
    assert set(doc["env"]) <= {"PATH", "HOME", "LANG", "TMPDIR", "LIBRARIAN_RECIPE_DIR",
                               "LIBRARIAN_RUN_ID", "LIBRARIAN_INPUT_N", "LIBRARIAN_INPUT_TARGET",
                               "LC_CTYPE"}
    assert "AWS_SECRET_ACCESS_KEY" not in doc["env"]


def _dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie nobody reaps (pid 1 in a container) is dead too
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True


def test_timeout_kills_the_process_group(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = "#!/bin/sh\nsleep 30 &\necho child=$!\necho self=$$\nwait\n"
    retained(library, sources, "sleepy", script, timeout=1)
    result = cli(capsys, library, "run", "sleepy", "--json")
    assert result.code == 124, result.err
    doc = result.json
    assert doc["status"] == "timed_out" and doc["timed_out"] is True
    assert doc["exit_code"] is None
    pids = dict(line.split("=") for line in doc["output"].split())
    deadline = time.monotonic() + 60  # a bound on a hang, not a measure of speed
    while not all(_dead(int(p)) for p in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_dead(int(p)) for p in pids.values())


def test_async_launch_wait_and_runs(
    library: Path, sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    go = tmp_path / "go"  # the recipe finishes only once the test creates it (60 s at most)
    script = (f"#!/bin/sh\nfor i in $(seq 1200); do [ -e '{go}' ] && break; sleep 0.05; done\n"
              f"[ -e '{go}' ] || exit 9\necho done \"$(cat)\"\n")
    retained(library, sources, "slow-echo", script,
             inputs="inputs:\n  who: {type: string, required: true}\n")
    launched = cli(capsys, library, "run", "slow-echo", "--async", "--arg", "who=me", "--json")
    assert launched.code == 0, launched.err
    receipt = launched.json
    assert receipt["kind"] == "run_launched" and receipt["status"] == "launched"
    assert "exit_code" not in receipt and "output" not in receipt
    run_id = receipt["run_id"]

    listed = cli(capsys, library, "runs", "--json").json
    assert listed["kind"] == "runs"
    assert [r["status"] for r in listed["runs"] if r["run_id"] == run_id] == ["running"] or [
        r["status"] for r in listed["runs"] if r["run_id"] == run_id] == ["launched"]

    still = cli(capsys, library, "wait", run_id, "--timeout", "0.1", "--json")
    assert still.code == 3 and still.json["status"] in ("launched", "running")
    go.touch()

    done = cli(capsys, library, "wait", run_id, "--json")
    assert done.code == 0, done.err
    result = done.json
    assert result["kind"] == "run_result" and result["status"] == "succeeded"
    assert result["exit_code"] == 0
    assert result["output"] == 'done {"who": "me"}\n'
    assert result["mode"] == "async"
    statuses = {r["run_id"]: r["status"] for r in cli(capsys, library, "runs", "--json").json[
        "runs"]}
    assert statuses[run_id] == "succeeded"


def test_async_python_recipe_declared_async_launches_and_unknown_run_id(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    retained(library, sources, "bg", "import json, sys\nprint('hi', json.load(sys.stdin))\n",
             execution="async", environment="python", entrypoint="main.py",
             inputs="inputs:\n  flag: {type: boolean, required: true}\n")
    launched = cli(capsys, library, "run", "bg", "--arg", "flag=no", "--json")
    assert launched.json["kind"] == "run_launched"
    waited = cli(capsys, library, "wait", launched.json["run_id"], "--json")
    assert waited.json["output"] == "hi {'flag': False}\n"
    assert cli(capsys, library, "wait", "20260101T000000-deadbeef").code == 2
    assert cli(capsys, library, "wait", "../../etc").code == 2


def test_a_run_whose_supervisor_died_is_lost(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    retained(library, sources, "hangs", "#!/bin/sh\necho $$\nexec sleep 30\n")
    run_id = cli(capsys, library, "run", "hangs", "--async", "--json").json["run_id"]
    run_dir = library / ".git" / "librarian" / "runs" / run_id
    deadline = time.monotonic() + 10
    while not (run_dir / "stdout").exists() or not (run_dir / "stdout").read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    recipe_pid = int((run_dir / "stdout").read_text())
    supervisor = int((run_dir / "supervisor.pid").read_text())
    os.kill(supervisor, signal.SIGKILL)
    try:
        deadline = time.monotonic() + 5
        while not _dead(supervisor):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        runs = cli(capsys, library, "runs", "--json").json["runs"]
        assert [r["status"] for r in runs if r["run_id"] == run_id] == ["lost"]
        deadline = time.monotonic() + 5  # the orphaned recipe is killed with the run
        while not _dead(recipe_pid):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        waited = cli(capsys, library, "wait", run_id, "--json")
        assert waited.code == 125 and waited.json["status"] == "lost"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(recipe_pid, signal.SIGKILL)
    ledger = (library / ".git" / "librarian" / "usage.jsonl").read_text().splitlines()
    assert [json.loads(line)["status"] for line in ledger].count("lost") == 1


def test_ledger_counts_after_a_mix_of_runs(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    retained(library, sources, "maybe", "#!/bin/sh\nexit \"$LIBRARIAN_INPUT_CODE\"\n",
             inputs="inputs:\n  code: {type: integer, required: true}\n")
    assert cli(capsys, library, "expose", "maybe", "--as", "maybe-tool").code == 0
    assert cli(capsys, library, "run", "maybe", "--arg", "code=0").code == 0
    assert cli(capsys, library, "run", "maybe-tool", "--arg", "code=0").code == 0
    assert cli(capsys, library, "run", "maybe", "--arg", "code=4").code == 4
    assert cli(capsys, library, "run", "maybe", "--arg", "code=nope").code == 5  # refused
    async_id = cli(capsys, library, "run", "maybe-tool", "--async", "--arg", "code=1",
                   "--json").json["run_id"]
    assert cli(capsys, library, "wait", async_id).code == 1
    assert cli(capsys, library, "withdraw", "maybe-tool").code == 0  # usage is kept

    doc = cli(capsys, library, "inspect", "recipes", "--verbose", "--json").json
    (item,) = [i for i in doc["items"] if i["path"] == "recipes/maybe"]
    usage = item["usage"]
    assert usage["runs"] == 4
    assert usage["successes"] == 2
    assert usage["failures"] == 2
    assert usage["refusals"] == 1
    assert usage["last_used"] is not None
    text = cli(capsys, library, "inspect", "recipes", "--verbose").out
    assert "4 runs, 2 succeeded, 2 failed" in text
    entries = [json.loads(line) for line in
               (library / ".git" / "librarian" / "usage.jsonl").read_text().splitlines()]
    assert {e["entry"] for e in entries} == {"tool", "recipe"}
    assert all(e["digest"].startswith("sha256:") for e in entries)


def test_real_process_streams_output_and_passes_the_exit_code(
    library: Path, sources: Path
) -> None:
    from support.helpers import run_process

    retained(library, sources, "loud", "#!/bin/sh\necho out\necho err >&2\nexit 9\n")
    result = run_process("--library", str(library), "run", "loud")
    assert result.returncode == 9
    assert result.stdout == "out\n"
    assert result.stderr.startswith("err\n")
    assert "failed (exit 9)" in result.stderr


def test_async_supervisor_does_not_import_from_the_callers_directory(
    library: Path, sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The supervisor is started isolated (``python -I``, cwd = the run directory): a
    ``json.py`` in the caller's directory is never imported by it."""
    retained(library, sources, "quick", "#!/bin/sh\necho fine\n")
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil"
    write(evil / "json.py", f"open({str(marker)!r}, 'w').write('json.py ran')\n")
    write(evil / "librarian.py", f"open({str(marker)!r}, 'w').write('librarian.py ran')\n")
    monkeypatch.chdir(evil)
    # `-I` here too: the command line itself must not import from this directory either,
    # as the installed `librarian` script would not.
    launched = subprocess.run(
        [sys.executable, "-I", "-m", "librarian", "--library", str(library), "run", "quick",
         "--async", "--json"],
        capture_output=True, text=True, timeout=60, check=False)
    assert launched.returncode == 0, launched.stderr
    run_id = json.loads(launched.stdout)["run_id"]
    waited = cli(capsys, library, "wait", run_id, "--timeout", "30", "--json")
    assert waited.code == 0, (waited.err, (library / ".git/librarian/runs" / run_id /
                                           "supervisor.log").read_text())
    assert waited.json["status"] == "succeeded" and waited.json["output"] == "fine\n"
    assert not marker.exists(), marker.read_text()


def test_a_failed_preparation_leaves_no_run_and_no_scratch(
    library: Path, sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    lib = retained(library, sources, "quick", "#!/bin/sh\necho fine\n")
    scratch_root = tmp_path / "scratch-root"
    scratch_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch_root))

    def broken(*args: object, **kwargs: object) -> list[str]:
        # the scratch directory (with its read-only recipe copy) exists by now
        assert [p.name.startswith("librarian-run-") for p in scratch_root.iterdir()] == [True]
        raise RuntimeError("boom")

    monkeypatch.setattr(runner, "command_for", broken)
    with pytest.raises(RuntimeError, match="boom"):
        runner.start_run(lib, "quick", {})
    assert list(scratch_root.iterdir()) == []
    runs = library / ".git" / "librarian" / "runs"
    assert not runs.exists() or list(runs.iterdir()) == []


# -- docker (no daemon here: the argv is a pure function; the kill goes to a fake client) --


def _docker_manifest(**kw: object) -> RecipeManifest:
    fields: dict[str, object] = {
        "name": "boxed", "description": "Boxed.", "execution": "sync",
        "environment": "docker", "entrypoint": "bin/run.sh",
        "inputs": (RecipeInput("n", "integer"),),
        "effects": RecipeEffects("none", False), **kw}
    return RecipeManifest(**fields)  # type: ignore[arg-type]


def test_docker_argv_names_the_container_and_runs_as_the_caller() -> None:
    env = {"PATH": "/bin", "HOME": "/s/work", "LIBRARIAN_RUN_ID": "RUN",
           "LIBRARIAN_RECIPE_DIR": "/s/recipe", "LIBRARIAN_INPUT_N": "3", "SECRET": "x"}
    argv = docker_command(_docker_manifest(), "/usr/bin/docker", Path("/s/recipe"),
                          Path("/s/work"), env, run_id="RUN", user=(1234, 567))
    assert argv[:4] == ["/usr/bin/docker", "run", "--rm", "-i"]
    pairs = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}
    assert pairs["--name"] == container_name("RUN") == "librarian-RUN"
    assert pairs["--user"] == "1234:567"
    assert pairs["--network"] == "none"
    mounts = [argv[i + 1] for i, a in enumerate(argv) if a == "-v"]
    assert mounts == ["/s/recipe:/recipe:ro", "/s/work:/work"]  # no host path besides these
    passed = sorted(argv[i + 1] for i, a in enumerate(argv) if a == "-e")
    assert passed == ["HOME=/work", "LIBRARIAN_INPUT_N=3", "LIBRARIAN_RECIPE_DIR=/recipe",
                      "LIBRARIAN_RUN_ID=RUN"]
    assert argv[-3:] == ["alpine:3", "/bin/sh", "/recipe/bin/run.sh"]
    networked = docker_command(_docker_manifest(effects=RecipeEffects("none", True)), "d",
                               Path("/r"), Path("/w"), {}, run_id="R", user=(0, 0))
    assert networked[networked.index("--network") + 1] == "bridge"


def test_docker_path_inputs_are_a_problem_only_for_docker() -> None:
    path_input = (RecipeInput("target", "path"), RecipeInput("n", "integer"))
    assert path_input_problem(_docker_manifest()) is None
    problem = path_input_problem(_docker_manifest(inputs=path_input))
    assert problem is not None and "path inputs (target)" in problem
    assert path_input_problem(_docker_manifest(environment="shell", inputs=path_input)) is None


def test_a_timed_out_docker_run_kills_its_container(
    library: Path, sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = tmp_path / "docker.log"
    client = write(tmp_path / "bin" / "docker",
                   f'#!/bin/sh\necho "$*" >> {log}\n'
                   'if [ "$1" = run ]; then exec sleep 30; fi\n', 0o755)
    available = Availability(True, program=str(client))
    monkeypatch.setattr(gate, "environment_availability", lambda environment: available)
    monkeypatch.setattr(runner, "environment_availability", lambda environment: available)
    retained(library, sources, "boxed", "#!/bin/sh\necho never\n", environment="docker",
             timeout=1)
    result = cli(capsys, library, "run", "boxed", "--json")
    assert result.code == 124, result.err
    run_id = result.json["run_id"]
    lines = log.read_text().splitlines()
    assert lines[0].startswith(f"run --rm -i --name librarian-{run_id} "
                               f"--user {os.getuid()}:{os.getgid()} ")
    assert lines[1:] == [f"kill librarian-{run_id}"]


@pytest.mark.crash
def test_an_async_run_killed_before_its_supervisor_started_is_lost_at_once(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The launching command is SIGKILLed after it recorded the run and before the
    supervisor started: `wait` reports the run lost within seconds, not after the 30 s
    launch grace a live launcher gets."""
    retained(library, sources, "quick", "#!/bin/sh\necho fine\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIBRARIAN_")}
    env["LIBRARIAN_CRASH_AT"] = "run-before-supervisor"
    killed = subprocess.run(
        [sys.executable, "-m", "librarian", "--library", str(library), "run", "quick",
         "--async", "--json"], capture_output=True, text=True, timeout=60, check=False,
        env=env)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    (run_dir,) = (library / ".git" / "librarian" / "runs").iterdir()
    # lost after the orphaned launch's grace (2 s), long before a live launcher's (30 s)
    # would let a wait giving up after 15 s see it
    waited = cli(capsys, library, "wait", run_dir.name, "--timeout", "15", "--json")
    assert waited.code == 125 and waited.json["status"] == "lost"
