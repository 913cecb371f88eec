"""Running recipes for real: sync and async, shell and python, typed inputs, timeouts,
the scrubbed environment, lost runs and the usage ledger."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

import pytest
from helpers import run_main, write

from librarian.gate import approve
from librarian.library import Library
from librarian.retention import retain

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
    lib = Library(library)
    retain(lib, make_recipe(sources, name, script, **kw))  # type: ignore[arg-type]
    approve(lib, name)
    return lib


def cli(capsys: pytest.CaptureFixture[str], library: Path, *args: str):  # type: ignore[no-untyped-def]
    return run_main(capsys, "--library", str(library), *args)


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
    began = time.monotonic()
    result = cli(capsys, library, "run", "sleepy", "--json")
    assert time.monotonic() - began < 10
    assert result.code == 124, result.err
    doc = result.json
    assert doc["status"] == "timed_out" and doc["timed_out"] is True
    assert doc["exit_code"] is None
    pids = dict(line.split("=") for line in doc["output"].split())
    deadline = time.monotonic() + 5
    while not all(_dead(int(p)) for p in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_dead(int(p)) for p in pids.values())


def test_async_launch_wait_and_runs(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    retained(library, sources, "slow-echo", "#!/bin/sh\nsleep 1\necho done \"$(cat)\"\n",
             inputs="inputs:\n  who: {type: string, required: true}\n")
    began = time.monotonic()
    launched = cli(capsys, library, "run", "slow-echo", "--async", "--arg", "who=me", "--json")
    assert launched.code == 0, launched.err
    assert time.monotonic() - began < 1.0  # returns before the recipe could finish
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
    from helpers import run_process

    retained(library, sources, "loud", "#!/bin/sh\necho out\necho err >&2\nexit 9\n")
    result = run_process("--library", str(library), "run", "loud")
    assert result.returncode == 9
    assert result.stdout == "out\n"
    assert result.stderr.startswith("err\n")
    assert "failed (exit 9)" in result.stderr
