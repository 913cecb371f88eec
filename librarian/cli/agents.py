"""Commands for agents reading the library: ``mcp`` (serve it over MCP) and
``export codex-config``. ``mcp`` imports the MCP SDK (an optional extra, about a second of
imports); nothing else does."""

from __future__ import annotations

from typing import Annotated

import typer

from librarian.cli.app import JsonOpt, app, current_stack, emit, jsonable
from librarian.errors import UsageError

export_app = typer.Typer(
    help="Print configuration for other agents (on stdout; nothing is written).",
    no_args_is_help=True)
app.add_typer(export_app, name="export")


ProfileOpt = Annotated[str | None, typer.Option(
    "--profile", help="Only what this agent profile of library.yaml shows.")]


@app.command()
def mcp(profile: ProfileOpt = None, as_json: JsonOpt = False) -> None:
    """Serve the library (over its layers) to agents over the Model Context Protocol (stdio).

    It speaks JSON-RPC on stdout until the client closes stdin (``--json`` changes nothing)."""
    try:
        from librarian.agents.server import serve
    except ModuleNotFoundError as exc:
        # The SDK or any of its own dependencies (anyio, pydantic, …): not librarian's.
        if (exc.name or "").split(".")[0] == "librarian":
            raise
        raise UsageError("`librarian mcp` needs the MCP SDK, which is not installed",
                         hint="pip install 'agent-librarian[mcp]'") from None
    stack = current_stack()
    serve(stack.nearest, profile, stack)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="Words to look for.")],
    limit: Annotated[int, typer.Option("--limit", help="At most this many (1-50).")] = 10,
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Find visible skills by name, description and body (best first), those a prompt
    budget leaves out included."""
    from librarian.agents.skills import search

    found = search(current_stack().nearest, query, limit, profile)
    lines = [f"{hit.name}  {hit.description}\n    {hit.location}" for hit in found.hits]
    emit({"kind": "search", **jsonable(found)}, as_json,
         "\n".join(lines) or f"no visible skill matches {query!r}")


@export_app.command("codex-config")
def codex_config(profile: ProfileOpt = None, as_json: JsonOpt = False) -> None:
    """The ~/.codex/config.toml entries that hide from Codex what the library hides."""
    from librarian.agents.codex import codex_config as build

    config = build(current_stack(), profile)
    document = {"kind": "codex_config", **jsonable(config)}
    emit(document, as_json, config.toml.rstrip("\n"))
