"""The entry point: the lazy command table and the one place errors become exit codes.

Errors are mapped to exit codes and the one-line ``librarian: error: …`` format in ``main``
and nowhere else.
"""

from __future__ import annotations

import errno
import gc
import os
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

import click
from typer import main as typer_main

from librarian.cli import foundation as _foundation  # noqa: F401  (registers its commands)
from librarian.cli.app import app
from librarian.cli.progress import on_terminal
from librarian.errors import LibrarianError

# Command modules of later capabilities register their commands on `app` when imported.
# typer inspects every registered command when it starts (~20 ms for these modules), so a
# command line imports only the module of its own command, and its table holds that one
# command; help, an unknown command or no command imports them all and lists them all.
# tests/test_cli_exit_codes.py holds this table to the modules.
COMMAND_MODULES = {
    **dict.fromkeys(("review", "promote", "discard", "defer", "revise", "retire", "restore",
                     "hide", "unhide", "show", "resident", "prompt"), "skills"),
    **dict.fromkeys(("expose", "withdraw", "approve", "run", "runs", "wait"), "tools"),
    **dict.fromkeys(("source", "outdated", "update"), "sources"),
    **dict.fromkeys(("key", "release", "verify"), "trust"),
    **dict.fromkeys(("mcp", "export"), "agents"),
    **dict.fromkeys(("sync", "clone", "merge-driver"), "team"),
    "daemon": "daemon",
}
FOUNDATION_COMMANDS = frozenset(
    ("init", "retain", "inspect", "cat", "status", "diff", "log", "check", "recover", "demo",
     "hooks"))


def library_first(args: list[str]) -> list[str]:
    """``--library PATH`` (or ``--library=PATH``) given after the command moves in front of
    it, where the top-level option is parsed; arguments after ``--`` are left alone."""
    out: list[str] = []
    moved: list[str] = []
    position = 0
    while position < len(args):
        arg = args[position]
        if arg == "--":
            out += args[position:]
            break
        if arg == "--library" and position + 1 < len(args):
            moved += args[position:position + 2]
            position += 2
            continue
        if arg.startswith("--library="):
            moved.append(arg)
        else:
            out.append(arg)
        position += 1
    return moved + out


def register_commands(args: list[str]) -> None:
    """Register the command module(s) the command line ``args`` needs on ``app``."""
    command, skip = None, False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--library":
            skip = True  # its value is not the command
        elif arg in ("--help", "-h"):
            break  # the top-level help lists every command
        elif not arg.startswith("-"):
            command = arg
            break
    global _only
    if command in FOUNDATION_COMMANDS:
        _use(frozenset())
    elif command in COMMAND_MODULES:
        _use(frozenset({COMMAND_MODULES[command]}))
    else:
        _use(frozenset(COMMAND_MODULES.values()))
    _only = command if command in FOUNDATION_COMMANDS or command in COMMAND_MODULES else None


#: ``app``'s registrations with the foundation's commands only, and what importing each
#: command module added to them: a table for any set of modules is the foundation's plus
#: theirs in sorted order, whatever was imported before (the daemon imports them all).
_BASE = (list(app.registered_commands), list(app.registered_groups))
_added: dict[str, tuple[list[Any], list[Any]]] = {}
_in_use: frozenset[str] = frozenset()
#: The one command a command line names, when it is a known one: its table holds only it.
_only: str | None = None
_tables: dict[tuple[frozenset[str], str | None], click.Command] = {}


def _use(modules: frozenset[str]) -> None:
    """Make ``app`` hold exactly the foundation's commands and those of ``modules``."""
    from importlib import import_module

    global _in_use
    commands, groups = list(_BASE[0]), list(_BASE[1])
    for module in sorted(modules):
        if module not in _added:
            app.registered_commands[:], app.registered_groups[:] = commands, groups
            import_module(f"librarian.cli.{module}")  # registers its commands when run
            _added[module] = (app.registered_commands[len(commands):],
                              app.registered_groups[len(groups):])
        commands += _added[module][0]
        groups += _added[module][1]
    app.registered_commands[:], app.registered_groups[:] = commands, groups
    _in_use = modules


def _name(info: Any) -> str:
    """The name a registered command or group is called by (typer's own rule)."""
    return str(info.name or typer_main.get_command_name(info.callback.__name__))


def command_table() -> click.Command:
    """The click command typer builds from ``app``, built once per set of command modules
    and named command: typer inspects every command's signature to build it (6 ms for the
    foundation's eleven, 10 ms with the sources' here), so the table of a command line
    that names a known command holds that command alone (its parsing, help and errors are
    the command's own; the group's options are the same). Calling it is ``app(...)``
    without typer's excepthook, which only shows exceptions ``main`` never lets through."""
    key = (_in_use, _only)
    if key not in _tables:
        commands, groups = app.registered_commands[:], app.registered_groups[:]
        if _only is not None:
            app.registered_commands[:] = [c for c in commands if _name(c) == _only]
            app.registered_groups[:] = [g for g in groups if _name(g) == _only]
        try:
            _tables[key] = typer_main.get_command(app)
        finally:
            app.registered_commands[:], app.registered_groups[:] = commands, groups
    return _tables[key]


def prebuild_tables() -> None:
    """Build every table a command line can ask for, once: the daemon's server calls it
    before it forks, so a child runs its command without typer building anything."""
    global _only
    for command in (*sorted(FOUNDATION_COMMANDS), *sorted(COMMAND_MODULES), "--help"):
        register_commands([command])
        command_table()
    _use(frozenset())  # the foundation's registered, as at start
    _only = None


def _fail(
    message: str, code: int, hint: str | None, as_json: bool, details: Any = None
) -> NoReturn:
    if as_json:
        from librarian.cli.render import json_text

        document = {"kind": "error", "error": message, "exit_code": code, "hint": hint,
                    **(details or {})}
        sys.stdout.write(json_text(document) + "\n")
    from librarian.cli.render import error_line

    sys.stderr.write(error_line(message, hint) + "\n")
    raise SystemExit(code)


def _help_for(exc: click.ClickException) -> str:
    """The help of the command the error is about: ``librarian retain --help``."""
    context = getattr(exc, "ctx", None)
    path = context.command_path if context is not None else ""
    return f"{path or 'librarian'} --help"


def _strip_git_environment() -> None:
    """Inherited GIT_* variables would redirect dulwich (GIT_DIR, GIT_INDEX_FILE) or forge
    identities; a library is always the repository it says it is."""
    for key in [k for k in os.environ if k.startswith("GIT_")]:
        del os.environ[key]


def _code_loaded() -> None:
    """The command's table is built: the code loaded so far lives as long as the process.
    When ``cli.entry`` held the collector off while it loaded (a command run in a process
    of its own), those objects go out of the collector's sight (``gc.freeze``), so no
    collection of the command's own work goes over them again, and it runs from here on.
    Left alone when the collector is on (a test calling ``main``, the daemon's child)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def main(argv: list[str] | None = None) -> int:
    """Console entry point: the single place where errors become exit codes."""
    _strip_git_environment()
    args = library_first(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    register_commands(args)
    try:
        with on_terminal(as_json):
            table = command_table()
            _code_loaded()
            result = table(args=args, prog_name="librarian", standalone_mode=False)
    except LibrarianError as exc:
        # The path an error is about goes into the JSON document; the one human line
        # already names it.
        context = {"path": exc.path} if exc.path is not None else {}
        _fail(" ".join(exc.message.split("\n")), exc.exit_code, exc.hint, as_json,
              {**context, **exc.details})
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.exceptions.NoArgsIsHelpError as exc:  # `librarian` or `librarian source`
        if not as_json:
            sys.stdout.write(exc.format_message() + "\n")
        _fail("a command is required", 2, "see the commands above, or `librarian --help`",
              as_json)
    except click.ClickException as exc:  # usage errors found while parsing
        message = " ".join(exc.format_message().split())
        # click and typer each add "Did you mean …?" to an unknown command: say it once.
        message = re.sub(r"(Did you mean [^?]*\?)(?: \1)+", r"\1", message)
        _fail(message, 2, f"see `{_help_for(exc)}`", as_json)
    except click.exceptions.Abort:
        _fail("aborted", 1, None, as_json)
    except KeyboardInterrupt:
        _fail("interrupted", 130, None, as_json)
    except BrokenPipeError:
        return 0
    except SystemExit:
        # No command exits from inside click: this is click swallowing a write to a pipe
        # its reader closed (it wraps the streams so nothing more is written, then exits
        # 1). The reader went away; that is not a failure, as just above.
        if type(sys.stdout).__name__.endswith("PacifyFlushWrapper"):
            return 0
        raise
    except OSError as exc:
        if exc.errno not in _DISK_FULL:
            _bug(exc, as_json)
        _fail(f"{_disk_of(exc.filename, args)} is full ({exc.strerror})", 3,
              "free some space and run the command again; `librarian recover` finishes or "
              "rolls back anything it interrupted", as_json)
    except Exception as exc:  # the one place a bug is turned into exit 1
        _bug(exc, as_json)
    return int(result) if isinstance(result, int) else 0


#: A full disk or quota, or a file-size limit (RLIMIT_FSIZE): not a bug, exit 3.
_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def _disk_of(filename: object, args: list[str]) -> str:
    """'the disk holding /x (mounted at /)' for the file a write failed on, else for the
    library the command names (a failed write() carries no file name)."""
    if isinstance(filename, (str, bytes)) and filename:
        path = Path(os.fsdecode(filename)).absolute()
    elif "--library" in args[:-1]:
        path = Path(args[args.index("--library") + 1]).absolute()
    else:
        path = Path(os.environ.get("LIBRARIAN_LIBRARY") or Path.cwd()).absolute()
    mount = path
    while not mount.is_mount() and mount != mount.parent:
        mount = mount.parent
    return f"the disk holding {path} (mounted at {mount})"


def _bug(exc: BaseException, as_json: bool) -> NoReturn:
    if os.environ.get("LIBRARIAN_DEBUG"):
        import traceback  # only on this path: it costs ~20 ms to import

        traceback.print_exc()
    _fail(f"internal error: {type(exc).__name__}: {exc}", 1,
          "this is a bug in librarian; rerun with LIBRARIAN_DEBUG=1 for the traceback",
          as_json)


def entry() -> None:
    """In-process only: the console script of an install made before ``cli/entry.py``
    (pip writes the entry's name into it) still runs; reinstalling makes it the new one."""
    raise SystemExit(main())
