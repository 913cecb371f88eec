"""The typer application and what every command module shares.

Command modules (``cli.foundation``, ``cli.skills``, ``cli.tools``, ``cli.sources``)
register their commands on ``app``; each command parses, calls one library function and
prints. Errors are mapped to exit codes in ``cli.main`` only.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from librarian.layers.stack import Stack
    from librarian.library import Library

#: ``-h`` as well as ``--help``, on every command and group.
CONTEXT = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    add_completion=True,
    context_settings=CONTEXT,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Keep an agent's skills and capabilities in a git repository, managed like packages.",
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document.")]


class State:
    library: Path | None = None
    layers: tuple[Path, ...] = ()


def current_library() -> Library:
    """The library this command works on, opened with the files its commits generate (the
    Claude Code manifests, which the agents layer makes)."""
    from librarian.agents.claude_manifests import GENERATED
    from librarian.library import find_library

    return find_library(State.library, generated=GENERATED)


def current_stack() -> Stack:
    """The layers a reading command sees (``librarian.layers``): the library this command
    works on, over ``--layer`` and, when that library was found rather than named, the
    user config's layers and the user's library."""
    from librarian.agents.claude_manifests import GENERATED
    from librarian.layers.stack import open_stack

    return open_stack(State.library, State.layers, generated=GENERATED)


def emit(value: Any, as_json: bool, human: str | None = None) -> None:
    """Print ``value`` as one JSON document, or the human text."""
    from librarian.cli.render import json_text
    from librarian.core.progress import finish

    finish()  # no frame of a progress display stays beside the output
    if as_json:
        typer.echo(json_text(value))
    elif human is not None:
        typer.echo(human)


def jsonable(value: Any) -> dict[str, Any]:
    from librarian.core.jsonable import to_jsonable

    result: dict[str, Any] = to_jsonable(value)
    return result


def _version(value: bool) -> None:
    if value:
        from librarian import __version__

        typer.echo(f"librarian {__version__}")
        raise typer.Exit(0)


@app.callback()
def _options(
    library: Annotated[
        Path | None,
        typer.Option("--library", help="The library (default: $LIBRARIAN_LIBRARY, else "
                     "the nearest parent holding library.yaml, else 'library:' in the user "
                     "config file). Accepted after the command too."),
    ] = None,
    layer: Annotated[
        list[Path] | None,
        typer.Option("--layer", help="A library read under it by prompt, mcp, cat, run, "
                     "check, inspect and the exports (repeatable; nearest first). "
                     "Accepted after the command too."),
    ] = None,
    version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")]
    = False,
) -> None:
    State.library = library
    State.layers = tuple(layer or ())
