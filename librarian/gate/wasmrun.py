"""Running a wasm recipe in process with the ``wasmtime`` package (the ``wasm`` extra).

Run as a script, ``python -I wasmrun.py CONFIG`` (standard library and ``wasmtime`` only),
in the run's own process like any other entrypoint, so the gate's process group,
timeout, output capture and records stay the same. CONFIG (JSON) names the module, the
directories to pre-open (``[host, guest, writable]``), the environment, the timeout and
the memory cap. The module gets WASI with exactly those directories (nothing else of the
file system), no network (WASI preview 1 has no sockets), the ``LIBRARIAN_*`` variables
as its environment and the run's stdin, stdout and stderr. The timeout is an epoch
deadline: a timer thread advances the engine's epoch and the running code traps; the
process then exits with ``TIMEOUT_EXIT`` and the gate records the run ``timed_out``.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Sequence

TIMEOUT_EXIT = 124
#: Exit status when the module cannot be loaded or traps (as a shell reports "cannot run")
FAILED_EXIT = 126


def run(config: dict[str, object]) -> int:
    import wasmtime

    engine_config = wasmtime.Config()
    engine_config.epoch_interruption = True
    engine = wasmtime.Engine(engine_config)
    store = wasmtime.Store(engine)
    memory = config.get("memory_bytes")
    if isinstance(memory, int):
        store.set_limits(memory_size=memory)
    store.set_epoch_deadline(1)
    wasi = wasmtime.WasiConfig()
    wasi.argv = [str(config["module"])]
    environment = config.get("env")
    if isinstance(environment, dict):
        wasi.env = sorted((str(k), str(v)) for k, v in environment.items())
    wasi.inherit_stdin()
    wasi.inherit_stdout()
    wasi.inherit_stderr()
    preopens = config.get("preopen")
    for host, guest, writable in preopens if isinstance(preopens, list) else ():
        wasi.preopen_dir(str(host), str(guest), bool(writable))
    store.set_wasi(wasi)
    linker = wasmtime.Linker(engine)
    linker.define_wasi()
    timed_out = threading.Event()

    def expire() -> None:
        timed_out.set()
        engine.increment_epoch()

    timeout = config.get("timeout")
    timer = threading.Timer(float(timeout) if isinstance(timeout, (int, float)) else 600.0,
                            expire)
    timer.daemon = True
    try:
        module = wasmtime.Module.from_file(engine, str(config["module"]))
        instance = linker.instantiate(store, module)
        start = instance.exports(store)["_start"]
        if not isinstance(start, wasmtime.Func):
            raise wasmtime.WasmtimeError("the module's _start is not a function")
        timer.start()
        start(store)
    except wasmtime.ExitTrap as exc:
        return exc.code
    except (wasmtime.Trap, wasmtime.WasmtimeError, KeyError) as exc:
        if timed_out.is_set():
            sys.stderr.write(f"librarian: the module was stopped at its timeout of {timeout} s\n")
            return TIMEOUT_EXIT
        sys.stderr.write(f"librarian: the wasm module failed: {exc}\n")
        return FAILED_EXIT
    finally:
        timer.cancel()
    return 0


def main(args: Sequence[str]) -> int:
    if len(args) != 1:
        sys.stderr.write("usage: wasmrun.py CONFIG\n")
        return 2
    return run(json.loads(args[0]))


if __name__ == "__main__":
    sys.stdout.flush()
    raise SystemExit(main(sys.argv[1:]))
