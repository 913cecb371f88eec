"""``librarian mcp``: the library served over the Model Context Protocol (stdio), with the
official ``mcp`` SDK's low-level server. The only module that imports ``mcp`` (about a
second of imports), and only ``librarian mcp`` imports it.

Every request is answered from the committed library through the same functions the
command line uses (``agents.skills``, ``agents.tools``, ``agents.curation``), run in a
worker thread. A ``LibrarianError`` becomes a tool error carrying its message and hint; any
other exception is a bug: logged to stderr with its traceback, answered as a tool error,
and the server goes on. A watcher polls HEAD and, when another process moves it, sends
``tools/list_changed`` and ``resources/list_changed``.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourcesListChanged,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError

from librarian import __version__
from librarian.agents import catalog, skills, tools
from librarian.agents.arguments import check_arguments
from librarian.agents.builtin import BUILTIN, error_text
from librarian.agents.curation import TOOL_VERBS, Curation, allowed_tools, curation_schema
from librarian.errors import LibrarianError, UsageError
from librarian.layers.stack import Layer, Stack
from librarian.layers.union import holder, union_registry
from librarian.library import Library
from librarian.prompt.entries import Registry
from librarian.prompt.profiles import committed_profile, profiled_registry

LOG = logging.getLogger("librarian.mcp")
POLL_SECONDS = 0.5
T = TypeVar("T")



def client_name(session: ServerSession) -> str:
    """The MCP client's own name from ``initialize``, made safe for a trailer."""
    params = session.client_params
    raw = params.client_info.name if params is not None else ""
    clean = "".join(ch for ch in raw if ch.isprintable()).strip()[:100]
    return clean or "mcp-client"


def _text_result(text: str, document: dict[str, Any] | None = None,
                 error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content=document, is_error=error)


def _json_result(document: dict[str, Any], error: bool = False) -> types.CallToolResult:
    return _text_result(json.dumps(document, indent=1, ensure_ascii=False), document, error)


def error_result(exc: LibrarianError) -> types.CallToolResult:
    return _text_result(error_text(exc), {"error": exc.message, "hint": exc.hint,
                               "exit_code": exc.exit_code, "kind": type(exc).__name__}, True)


class GetSkillParams(types.RequestParams):
    uri: str


class DirectoryParams(types.PaginatedRequestParams):
    uri: str


async def advertise_extension(ctx: ServerRequestContext[Any],
                              call_next: Callable[[ServerRequestContext[Any]], Any]) -> Any:
    """The skills extension in ``initialize``'s capabilities too: the SDK leaves
    ``extensions`` out of a 2025-11-25 answer (that revision's schema has no such field),
    while hosts of that revision look for it there."""
    result = await call_next(ctx)
    if ctx.method == "initialize" and isinstance(result, dict):
        capabilities = result.setdefault("capabilities", {})
        capabilities.setdefault("extensions", {})[catalog.EXTENSION] = {"directoryRead": True}
    return result


class LibraryServer:
    """The state of one server: its library, the registry of the HEAD it last read, the
    sessions to notify when HEAD moves. Over layers (``stack``), the registry is their
    union, a name is read (and a tool run, through its own layer's gate) in the layer that
    wins it, and the curation verbs change the nearest layer, ``library``."""

    def __init__(self, library: Library, *, cwd: Path | None = None,
                 profile: str | None = None, stack: Stack | None = None) -> None:
        self.library = library
        self.profile = profile  # an agent profile of library.yaml: narrows every listing
        self.stack = stack or Stack((Layer(library, "nearest"),))
        self.cwd = cwd or Path.cwd()
        self.head: bytes | None = self._read_head()
        self._registry: tuple[bytes | None, Registry] | None = None
        self.sessions: list[ServerSession] = []
        self.server: Server[Any] = Server(
            "librarian", version=__version__, title=f"librarian: {library.root.name}",
            instructions=self._instructions(),
            on_list_tools=self.list_tools, on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_templates,
            on_read_resource=self.read_resource)
        self.server.add_notification_handler("notifications/initialized",
                                             types.NotificationParams, self.initialized)
        # 2026-07-28: change notifications travel on `subscriptions/listen` streams only.
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        self.server.add_request_handler("subscriptions/listen",
                                        types.SubscriptionsListenRequestParams, self.listen)
        self.catalog = catalog.Catalog(library, self.narrow)
        self.server.extensions[catalog.EXTENSION] = {"directoryRead": True}
        self.server.middleware.append(advertise_extension)
        self.server.add_request_handler("skills/list", types.PaginatedRequestParams,
                                        self.skills_list)
        self.server.add_request_handler("skills/get", GetSkillParams, self.skills_get)
        self.server.add_request_handler("resources/directory/read", DirectoryParams,
                                        self.directory_read)

    def _instructions(self) -> str:
        try:
            return skills.instructions(self.library, self.registry())
        except LibrarianError as exc:  # served anyway: each call says what is wrong
            return skills.instructions_without_registry(self.library, error_text(exc))

    def narrow(self, registry: Registry) -> Registry:
        return profiled_registry(self.library, registry, self.profile)

    def _read_head(self) -> bytes | None:
        """HEAD of the library; over layers, the HEADs of all of them, as one key."""
        heads = []
        for layer in self.stack.layers:
            with layer.library.store() as store:
                heads.append(store.head() or b"-")
        return heads[0] if len(heads) == 1 and heads[0] != b"-" else (
            None if len(heads) == 1 else b" ".join(heads))

    def registry(self) -> Registry:
        head = self._read_head()
        if self._registry is None or self._registry[0] != head:
            self._registry = (head, profiled_registry(self.library,
                                                      union_registry(self.stack),
                                                      self.profile))
        return self._registry[1]

    async def _in_thread(self, work: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(work)

    # -- notifications ---------------------------------------------------------------

    async def initialized(self, ctx: ServerRequestContext[Any],
                          params: types.NotificationParams) -> None:
        if ctx.session not in self.sessions:
            self.sessions.append(ctx.session)

    async def watch(self, interval: float = POLL_SECONDS) -> None:
        failing: str | None = None  # said once, not every poll, until it changes
        while True:
            await anyio.sleep(interval)
            try:
                head = await self._in_thread(self._read_head)
            except Exception as exc:  # a damaged or vanished repository: say so once
                said = f"librarian mcp: cannot read the library's HEAD: {exc!r}"
                if said != failing:
                    LOG.warning("%s (calls answer with the error until it is readable)",
                                said)
                    failing = said
                continue
            if failing is not None:
                LOG.warning("librarian mcp: the library's HEAD is readable again")
                failing = None
            if head == self.head:
                continue
            self.head = head
            await self.bus.publish(ToolsListChanged())
            await self.bus.publish(ResourcesListChanged())
            for session in list(self.sessions):
                try:
                    await session.send_tool_list_changed()
                    await session.send_resource_list_changed()
                except Exception:  # a client gone: stop telling it
                    LOG.debug("librarian mcp: dropping a closed session", exc_info=True)
                    self.sessions.remove(session)

    # -- tools -----------------------------------------------------------------------

    async def list_tools(self, ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        listed = [types.Tool(name=name, description=text, input_schema=schema)
                  for name, (text, schema) in (await self._in_thread(self.schemas)).items()]
        return types.ListToolsResult(tools=listed)

    def schemas(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """Every tool offered now: name -> (description, input schema). A committed
        library.yaml or tools.yaml that cannot be read leaves out what depends on it (a
        call of list_skills says why); the built-in tools are always offered."""
        offered = {name: (text, tools.object_schema(props, req))
                   for name, (text, props, req) in BUILTIN.items()}
        try:
            for tool in allowed_tools(self.library):
                offered[tool] = curation_schema(tool)
            # An exposed tool named like a curation verb is not offered (the verb keeps
            # its meaning); `librarian expose --as` gives it another name.
            for d in tools.tool_definitions(self.registry()):
                if d.name not in TOOL_VERBS:
                    offered.setdefault(d.name, (d.description, d.input_schema))
        except LibrarianError as exc:
            LOG.warning("librarian mcp: %s", error_text(exc))
        return offered

    async def call_tool(self, ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        agent = client_name(ctx.session)
        args = dict(params.arguments or {})
        try:
            return await self._in_thread(lambda: self._call(params.name, args, agent))
        except LibrarianError as exc:
            return error_result(exc)
        except Exception as exc:  # a bug: never kill the server over it
            LOG.exception("librarian mcp: internal error in %s", params.name)
            return _text_result(f"librarian: internal error (a bug): {exc!r}",
                                {"error": repr(exc), "exit_code": 1}, True)

    def _call(self, name: str, args: dict[str, Any], agent: str) -> types.CallToolResult:
        lib = self.library
        schema = BUILTIN.get(name)
        if schema is not None:
            check_arguments(name, args, tools.object_schema(schema[1], schema[2]))
        elif name in TOOL_VERBS:
            check_arguments(name, args, curation_schema(name)[1])
        else:
            definition = next((d for d in tools.tool_definitions(self.registry())
                               if d.name == name), None)
            if definition is not None:
                check_arguments(name, args, definition.input_schema)
        if name == "list_skills":
            budget = args.get("budget")
            if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)):
                raise UsageError("budget must be a whole number of characters")
            return _json_result(skills.list_skills(lib, budget, self.registry()))
        if name == "load_skill":
            wanted = str(args.get("name", ""))
            loaded = skills.load_skill(holder(self.stack, wanted).library, wanted)
            return _text_result(loaded["body"], loaded)
        if name == "read_skill_file":
            wanted = str(args.get("name", ""))
            found = skills.read_skill_file(holder(self.stack, wanted).library, wanted,
                                           str(args.get("path", "")))
            document = found.to_json()
            return _text_result(document.get("text", document.get("data", "")), document)
        if name == "search_skills":
            registry = self.registry()
            searched = skills.search(lib, args["query"], args.get("limit", 10),
                                  registry=registry)
            states = {s.name: s.state for s in registry.skills}
            hits = [{"name": h.name, "description": h.description, "location": h.location,
                     "uri": catalog.named_uri(h.name, states.get(h.name, "retained")),
                     "score": h.score} for h in searched.hits]
            return _json_result({"kind": "search", "query": searched.query, "hits": hits,
                                 "indexed": searched.indexed})
        if name in ("run_status", "wait_run"):
            run_id = str(args.get("run_id", ""))
            lib = self._runs_layer(run_id)
            done = (tools.run_status(lib, run_id) if name == "run_status" else
                    tools.wait_for_run(lib, run_id, args.get("timeout")))
            return _text_result(done.text, done.document, done.failed)
        if name in TOOL_VERBS:  # refused with the reason when library.yaml does not allow it
            receipt = Curation(lib, agent).call(name, args)
            return _json_result(receipt.to_json())
        if name in {t.name for t in self.registry().tools}:
            result = tools.call_tool(holder(self.stack, name, tools=True).library, name,
                                     args, self.cwd)
            return _text_result(result.text, result.document, result.failed)
        raise UsageError(f"no tool named {name!r} on this server",
                         hint="tools/list says what this library offers now")

    def _runs_layer(self, run_id: str) -> Library:
        """The layer whose gate launched ``run_id`` (its runs are kept in its own state)."""
        for layer in self.stack.layers:
            if tools.knows_run(layer.library, run_id):
                return layer.library
        return self.library

    # -- resources -------------------------------------------------------------------

    async def _answer(self, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """A request of the skills extension: an unknown URI or cursor is -32602."""
        try:
            return await self._in_thread(work)
        except LibrarianError as exc:
            raise MCPError(types.INVALID_PARAMS, error_text(exc)) from None

    async def skills_list(self, ctx: ServerRequestContext[Any],
                          params: types.PaginatedRequestParams) -> dict[str, Any]:
        return await self._answer(lambda: self.catalog.list_page(params.cursor))

    async def skills_get(self, ctx: ServerRequestContext[Any],
                         params: GetSkillParams) -> dict[str, Any]:
        return await self._answer(lambda: self.catalog.get(params.uri))

    async def directory_read(self, ctx: ServerRequestContext[Any],
                             params: DirectoryParams) -> dict[str, Any]:
        return await self._answer(lambda: self.catalog.directory(params.uri))

    async def list_resources(self, ctx: ServerRequestContext[Any],
                             params: types.PaginatedRequestParams | None
                             ) -> types.ListResourcesResult:
        registry = await self._in_thread(self.registry)
        return types.ListResourcesResult(resources=[
            types.Resource(name=s.name, uri=skills.resource_uri(s.name, s.state),
                           description=s.description, mime_type="text/markdown")
            for s in registry.skills])

    async def list_templates(self, ctx: ServerRequestContext[Any],
                             params: types.PaginatedRequestParams | None
                             ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(
                name="skill-file", uri_template="skill://library/{name}/{+path}",
                description="A file of a retained skill, by its name and path in it."),
            types.ResourceTemplate(
                name="managed-skill-file", uri_template="skill://sources/{source}/{name}/{+path}",
                description="A file of a managed skill, by source, name and path in it.")])

    async def read_resource(self, ctx: ServerRequestContext[Any],
                            params: types.ReadResourceRequestParams
                            ) -> types.ReadResourceResult:
        def read() -> skills.SkillFile:
            if params.uri.startswith(("skill://library/", "skill://sources/")):
                path, data = self.catalog.read(params.uri)
                return skills.SkillFile(params.uri, path, data)
            name, path = skills.parse_skill_uri(params.uri)  # skill://NAME/PATH, as before
            return skills.read_skill_file(holder(self.stack, name).library, name, path)

        try:
            found = await self._in_thread(read)
        except LibrarianError as exc:  # the request's error, with the command line's words
            raise MCPError(types.INVALID_PARAMS, error_text(exc)) from None
        document = found.to_json()
        contents: types.TextResourceContents | types.BlobResourceContents
        if "text" in document:
            contents = types.TextResourceContents(uri=params.uri, text=document["text"],
                                                  mime_type=catalog.mime_of(found.path))
        else:
            contents = types.BlobResourceContents(uri=params.uri, blob=document["data"],
                                                  mime_type="application/octet-stream")
        return types.ReadResourceResult(contents=[contents])


async def _serve(state: LibraryServer) -> None:
    options = state.server.create_initialization_options(
        NotificationOptions(tools_changed=True, resources_changed=True))
    async with stdio_server() as (read, write), anyio.create_task_group() as group:
        group.start_soon(state.watch)
        await state.server.run(read, write, options)
        group.cancel_scope.cancel()


def serve(library: Library, profile: str | None = None, stack: Stack | None = None) -> None:
    """Serve ``library`` (over the layers of ``stack``, as agent ``profile`` sees it) on
    stdin/stdout until the client
    closes stdin."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    LOG.addHandler(handler)
    LOG.propagate = False
    if profile is not None:
        committed_profile(library, profile)  # an unknown profile: exit 2 before serving
    anyio.run(_serve, LibraryServer(library, profile=profile, stack=stack))
