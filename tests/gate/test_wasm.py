"""wasm recipes in process through the wasmtime package: a module built here from WAT
reads the directory pre-opened for it and its stdin, cannot read outside it, and is
stopped at its timeout; without the package and without a runtime, run refuses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.helpers import cli, write

from librarian.agents.claude_manifests import GENERATED
from librarian.gate import environments
from librarian.library.layout import Library
from librarian.ops.retention import retain

wasmtime = pytest.importorskip("wasmtime", reason="the wasm extra is not installed")

READER = r"""(module
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read"
    (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_prestat_get"
    (func $fd_prestat_get (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "data.txt")
  (data (i32.const 32) "../secret.txt")
  (data (i32.const 48) "denied\n")
  ;; the iovec at 0 (buffer at 1024), the count at 8, an opened descriptor at 12
  (func $copy (param $fd i32)
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 1000))
    (drop (call $fd_read (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8)))
    (i32.store (i32.const 4) (i32.load (i32.const 8)))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))
  (func $denied
    (i32.store (i32.const 0) (i32.const 48))
    (i32.store (i32.const 4) (i32.const 7))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))
  (func $show (param $dir i32) (param $path i32) (param $len i32)
    (if (i32.eqz (call $path_open (local.get $dir) (i32.const 0) (local.get $path)
                   (local.get $len) (i32.const 0) (i64.const 2) (i64.const 0)
                   (i32.const 0) (i32.const 12)))
      (then (call $copy (i32.load (i32.const 12))))
      (else (call $denied))))
  (func (export "_start")
    (call $copy (i32.const 0))                                ;; stdin: the inputs
    (call $show (i32.const 4) (i32.const 16) (i32.const 8))   ;; shared/data.txt
    (call $show (i32.const 4) (i32.const 32) (i32.const 13))  ;; shared/../secret.txt
    (call $show (i32.const 3) (i32.const 32) (i32.const 13))  ;; work/../secret.txt
    (if (i32.eqz (call $fd_prestat_get (i32.const 5) (i32.const 64)))  ;; a third preopen?
      (then (call $copy (i32.const 5))) (else (call $denied)))))
"""

SPIN = '(module (func (export "_start") (loop $forever (br $forever))))'


def make_wasm(base: Path, name: str, wat: str, *, timeout: int = 30,
              inputs: str = "") -> Path:
    root = base / name
    write(root / "recipe.yaml",
          f"name: {name}\ndescription: A wasm module.\nexecution: sync\n"
          f"environment: wasm\nentrypoint: module.wasm\n{inputs}result: Text on stdout.\n"
          f"effects: {{filesystem: read, network: false}}\ntimeout: {timeout}\n")
    write(root / "module.wasm", wasmtime.wat2wasm(wat))
    return root


@pytest.fixture(autouse=True)
def fresh_probe() -> Iterator[None]:
    environments.environment_availability.cache_clear()
    yield
    environments.environment_availability.cache_clear()


def test_a_module_reads_its_preopened_directory_and_nothing_outside(
    library: Path, sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    shared = tmp_path / "shared"
    write(shared / "data.txt", "hello from the shared directory\n")
    write(tmp_path / "secret.txt", "SECRET\n")
    retain(Library(library, GENERATED), make_wasm(sources, "reader", READER,
                                       inputs="inputs:\n  dir: {type: path, required: true}\n"))
    ran = cli(capsys, library, "run", "reader", "--yes", "--json", "--arg", f"dir={shared}")
    assert ran.code == 0, ran.out + ran.err
    output = ran.json["output"]
    stdin, rest = output.split("}", 1)
    assert json.loads(stdin + "}") == {"dir": str(shared)}
    # the work directory and the input are the only directories it has
    assert rest == "hello from the shared directory\ndenied\ndenied\ndenied\n"
    assert "SECRET" not in output
    assert ran.json["enforced"]["by"][0] == "wasi (wasmtime)"  # and its host confined
    assert ran.json["enforced"]["network"] is False


def test_a_module_is_stopped_at_its_timeout(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    retain(Library(library, GENERATED), make_wasm(sources, "spin", SPIN, timeout=1))
    ran = cli(capsys, library, "run", "spin", "--yes", "--json")
    assert ran.code == 124, ran.out
    assert ran.json["status"] == "timed_out" and ran.json["timed_out"] is True
    assert "stopped at its timeout" in ran.json["stderr"]  # by the epoch, not the kill


def test_without_the_package_or_a_runtime_run_refuses_with_the_install_line(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    retain(Library(library, GENERATED), make_wasm(sources, "spin", SPIN, timeout=1))
    monkeypatch.setattr(environments, "wasmtime_importable", lambda: False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    refused = cli(capsys, library, "run", "spin", "--yes")
    assert refused.code == 5
    assert "pip install 'agent-librarian[wasm]'" in refused.err
