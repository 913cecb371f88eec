"""Commands for agents reading the library: ``mcp`` (serve it over MCP) and
``export codex-config``. ``mcp`` imports the MCP SDK (an optional extra, about a second of
imports); nothing else does."""

from __future__ import annotations

import typer

from librarian.cli.app import JsonOpt, app, current_stack, emit, jsonable
from librarian.errors import UsageError

export_app = typer.Typer(help="Write configuration for other agents.", no_args_is_help=True)
app.add_typer(export_app, name="export")


@app.command()
def mcp(as_json: JsonOpt = False) -> None:
    """Serve the library (over its layers) to agents over the Model Context Protocol (stdio).

    It speaks JSON-RPC on stdout until the client closes stdin (``--json`` changes nothing)."""
    try:
        from librarian.agents.server import serve
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("mcp"):
            raise
        raise UsageError("`librarian mcp` needs the MCP SDK, which is not installed",
                         hint="pip install 'librarian[mcp]'") from None
    stack = current_stack()
    serve(stack.nearest, stack)


@export_app.command("codex-config")
def codex_config(as_json: JsonOpt = False) -> None:
    """The ~/.codex/config.toml entries that hide from Codex what the library hides."""
    from librarian.agents.codex import codex_config as build

    config = build(current_stack())
    document = {"kind": "codex_config", **jsonable(config)}
    emit(document, as_json, config.toml.rstrip("\n"))
