"""The entry point: the command table and the one place errors become exit codes.

Errors are mapped to exit codes and the one-line ``librarian: error: …`` format in ``main``
and nowhere else.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from importlib import import_module
from pathlib import Path
from typing import Any, NoReturn

import click
from typer import main as typer_main

from librarian.cli.app import app
from librarian.cli.progress import on_terminal
from librarian.errors import LibrarianError


def library_first(args: list[str]) -> list[str]:
    """``--library PATH`` and ``--layer PATH`` (or ``--library=PATH``…) given after the
    command move in front of it, where the top-level options are parsed; arguments after
    ``--`` are left alone."""
    out: list[str] = []
    moved: list[str] = []
    position = 0
    while position < len(args):
        arg = args[position]
        if arg == "--":
            out += args[position:]
            break
        if arg in ("--library", "--layer") and position + 1 < len(args):
            moved += args[position:position + 2]
            position += 2
            continue
        if arg.startswith(("--library=", "--layer=")):
            moved.append(arg)
        else:
            out.append(arg)
        position += 1
    return moved + out


def json_after_command(args: list[str]) -> list[str]:
    """``--json`` given before the command (``librarian --json status``) moves after it,
    where each command declares it, as ``--library`` is accepted on either side. Only the
    global options come before the command: ``--library`` takes the one value skipped."""
    position, skip, flags = 0, False, []
    for position, arg in enumerate(args):
        if skip:
            skip = False
        elif arg in ("--library", "--layer"):
            skip = True  # its value is not the command
        elif arg == "--json":
            flags.append(position)
        elif arg == "--" or not arg.startswith("-"):
            break
    else:
        position = len(args)
    if not flags:
        return args
    before = [arg for at, arg in enumerate(args[:position]) if at not in flags]
    rest = args[position:]
    end = rest.index("--") if "--" in rest else len(rest)
    return before + rest[:end] + ["--json"] + rest[end:]



#: The command modules, in the order ``--help`` lists their commands: each registers its
#: commands on ``app`` when imported.
COMMAND_MODULES = ("foundation", "agents", "skills", "sources", "tools", "trust", "team")
for _module in COMMAND_MODULES:
    import_module(f"librarian.cli.{_module}")

_table: click.Command | None = None


def command_table() -> click.Command:
    """The click command typer builds from ``app``, once per process. Calling it is
    ``app(...)`` without typer's excepthook, which only shows exceptions ``main`` never
    lets through."""
    global _table
    if _table is None:
        _table = typer_main.get_command(app)
    return _table


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


def main(argv: list[str] | None = None) -> int:
    """Console entry point: the single place where errors become exit codes."""
    _strip_git_environment()
    args = json_after_command(library_first(sys.argv[1:] if argv is None else argv))
    as_json = "--json" in args
    try:
        with on_terminal(as_json):
            table = command_table()
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
    """The console script of an install made before ``cli/entry.py`` (pip writes the
    entry's name into it) still runs; reinstalling makes it the new one."""
    raise SystemExit(main())
