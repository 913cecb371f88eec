"""The cyclic garbage collector while a command line loads its code (``cli.entry``,
``cli.main._code_loaded``): off until the command's table is built, then the loaded code
is frozen out of its sight and it runs for the command's own work."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import make_skill, run_main

Cap = pytest.CaptureFixture[str]

_PROBE = """
import gc, json, sys
sys.argv = ["librarian", *json.loads(sys.argv[1])]
from librarian.cli.entry import entry  # the client: a few small modules
collections = []  # per collection started: whether the loaded code was frozen by then
gc.callbacks.append(lambda phase, info: phase == "start"
                    and collections.append(gc.get_freeze_count() > 0))
try:
    entry()
except SystemExit as exc:
    code = exc.code
sys.stderr.write("\\n" + json.dumps([code, gc.isenabled(), gc.get_freeze_count(),
                                    collections, "typer" in sys.modules]))
"""


def _own_process(*args: str) -> tuple[int, bool, int, list[bool], bool]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(list(args))],
                          env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    code, enabled, frozen, collections, typer = json.loads(done.stderr.rsplit("\n", 1)[-1])
    return code, enabled, frozen, collections, typer


def test_a_command_in_its_own_process_loads_its_code_without_a_collection(
        library: Path, tmp_path: Path) -> None:
    make_skill(tmp_path, "alpha")
    for args in (("--library", str(library), "retain", str(tmp_path / "alpha")),
                 ("--library", str(library), "status"), ("--version",)):
        code, enabled, frozen, collections, typer = _own_process(*args)
        assert code == 0 and typer, args
        # The collector runs the command's own work: never left off.
        assert enabled, args
        # typer, click, dulwich and the command's modules: thousands of objects frozen.
        assert frozen > 5_000, (args, frozen)
        # No collection went over the code while it loaded.
        assert all(collections), (args, collections)


def test_a_usage_error_in_its_own_process_is_still_exit_2(library: Path) -> None:
    code, enabled, _, collections, _ = _own_process("--library", str(library), "status",
                                                    "--bogus")
    assert code == 2 and enabled and all(collections)


def test_main_in_a_process_whose_collector_is_on_freezes_nothing(library: Path,
                                                                 capsys: Cap) -> None:
    """A caller that runs ``main`` in its own long-lived process (the tests) keeps its
    collector as it was: nothing of its own is frozen."""
    before = gc.get_freeze_count()
    assert run_main(capsys, "--library", str(library), "status").code == 0
    assert gc.isenabled() and gc.get_freeze_count() == before
