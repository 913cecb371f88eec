"""``daemon start | stop | status``: the opt-in resident process of one library
(docs/commands.md). The server itself is ``cli.daemon_main``.
"""

from __future__ import annotations

from typing import Annotated

import typer

from librarian.cli.app import JsonOpt, app, current_library, emit, jsonable

daemon_app = typer.Typer(
    no_args_is_help=True,
    help="A resident process per library: commands start without loading Python (opt-in).")
app.add_typer(daemon_app, name="daemon")

def _text(state: object, verb: str) -> str:
    from librarian.daemon.control import DaemonState

    assert isinstance(state, DaemonState)
    if state.running:
        idle = "never exits when idle" if not state.idle_timeout else (
            f"exits after {state.idle_timeout:g} s idle")
        return (f"daemon {verb} for {state.library} (pid {state.pid}, {state.served} "
                f"command(s) served; {idle}; `librarian daemon stop` ends it)")
    note = f" ({state.note})" if state.note else ""
    return f"no daemon runs for {state.library}{note}"


@daemon_app.command("start")
def start(
    idle: Annotated[float, typer.Option(
        "--idle", help="Exit after this many seconds without a command (0: never).")] = 600.0,
    as_json: JsonOpt = False,
) -> None:
    """Start the library's daemon (a no-op when one runs)."""
    from librarian.daemon.control import start as start_daemon

    library = current_library()
    if library.prefix:  # its socket lives in the library's own .git
        from librarian.errors import UsageError

        raise UsageError(f"{library.root} is a folder of the repository at "
                         f"{library.repo_root}: the daemon serves a library with a repository "
                         "of its own")
    state = start_daemon(library.root, idle)
    emit({"kind": "daemon", **jsonable(state)}, as_json, _text(state, "running"))


@daemon_app.command("stop")
def stop(as_json: JsonOpt = False) -> None:
    """Stop the library's daemon (a no-op when none runs)."""
    from librarian.daemon.control import stop as stop_daemon

    state = stop_daemon(current_library().root)
    note = f" (pid {state.pid})" if state.pid else ""
    emit({"kind": "daemon", **jsonable(state)}, as_json,
         f"daemon stopped{note}" if state.note == "stopped" else _text(state, "running"))


@daemon_app.command("status")
def status(as_json: JsonOpt = False) -> None:
    """Whether the library's daemon runs, since when, and how much it served."""
    from librarian.daemon.control import status as daemon_status

    state = daemon_status(current_library().root)
    emit({"kind": "daemon", **jsonable(state)}, as_json, _text(state, "running"))
