"""The agent's own curation loop over MCP (spec §8), limited by the committed
``library.yaml`` (``agents: {may: [...]}``, default ``[draft]``): ``draft_skill`` and
``draft_recipe`` (``retain --draft``), ``promote``, ``defer``, ``discard`` and ``expose``.
Each is the command line's own operation, so each is one commit under the same rules, and
each commit names the agent in a ``Librarian-Agent`` trailer (the MCP client's name).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from librarian.agents.claude_manifests import committed_config
from librarian.core.events import acting_agent
from librarian.core.model import ItemFile
from librarian.core.receipts import Receipt
from librarian.errors import UsageError
from librarian.formats.config import DEFAULT_AGENT_VERBS
from librarian.formats.yamlio import dump_yaml
from librarian.gate.exposure import expose
from librarian.library import Library
from librarian.ops.lifecycle import defer, discard, promote
from librarian.ops.retention import retain_files

#: MCP tool name -> the ``agents.may`` verb that grants it
TOOL_VERBS = {"draft_skill": "draft", "draft_recipe": "draft", "promote": "promote",
              "defer": "defer", "discard": "discard", "expose": "expose"}
ENTRYPOINTS = {"shell": "run.sh", "python": "main.py"}


def allowed_verbs(library: Library) -> tuple[str, ...]:
    """``agents.may`` as committed at HEAD (the default when it is not set)."""
    with library.store() as store:
        config = committed_config(store, store.tree_of(store.head()))
    return config.agent_verbs if config is not None else DEFAULT_AGENT_VERBS


def allowed_tools(library: Library) -> list[str]:
    verbs = set(allowed_verbs(library))
    return [tool for tool, verb in TOOL_VERBS.items() if verb in verbs]


def _skill_md(name: str, description: str, body: str) -> bytes:
    front = dump_yaml({"name": name, "description": description}).decode()
    return f"---\n{front}---\n{body.rstrip()}\n".encode()


def _recipe_files(name: str, args: Mapping[str, Any]) -> tuple[ItemFile, ...]:
    environment = str(args.get("environment", "shell"))
    if environment not in ENTRYPOINTS:
        raise UsageError(f"draft_recipe: environment must be one of "
                         f"{', '.join(ENTRYPOINTS)}, got {environment!r}")
    entrypoint = ENTRYPOINTS[environment]
    manifest: dict[str, Any] = {
        "name": name, "description": args.get("description", ""),
        "execution": args.get("execution", "sync"), "environment": environment,
        "entrypoint": entrypoint,
    }
    for key in ("inputs", "result", "effects", "timeout"):
        if args.get(key) is not None:
            manifest[key] = args[key]
    script = str(args.get("script", ""))
    return (ItemFile("recipe.yaml", False, dump_yaml(manifest)),
            ItemFile(entrypoint, True, script.encode()))


def _draft(library: Library, name: str, files: tuple[ItemFile, ...],
           evidence: str | None) -> Receipt:
    return retain_files(library, files, name=name, draft=True, evidence=evidence)


@dataclass(frozen=True, slots=True)
class Curation:
    """One library, one agent (by its MCP client name)."""

    library: Library
    agent: str

    def call(self, tool: str, args: Mapping[str, Any]) -> Receipt:
        verb = TOOL_VERBS.get(tool)
        if verb is None:
            raise UsageError(f"unknown curation tool {tool!r}")
        if verb not in allowed_verbs(self.library):
            raise UsageError(f"library.yaml does not allow agents to {verb}",
                             hint="a person adds it to `agents: {may: [...]}` in library.yaml")
        with acting_agent(self.agent):
            return self._run(tool, args)

    def _run(self, tool: str, args: Mapping[str, Any]) -> Receipt:
        lib = self.library
        name = _text(args, "name")
        evidence = _optional(args, "evidence")
        if tool == "draft_skill":
            data = _skill_md(name, _text(args, "description"), _text(args, "body"))
            return _draft(lib, name, (ItemFile("SKILL.md", False, data),), evidence)
        if tool == "draft_recipe":
            return _draft(lib, name, _recipe_files(name, args), evidence)
        if tool == "promote":
            return promote(lib, name, evidence=evidence)
        if tool == "defer":
            return defer(lib, name, reason=_text(args, "reason"),
                         until=_optional(args, "until"), evidence=evidence)
        if tool == "discard":
            return discard(lib, name, reason=_text(args, "reason"), evidence=evidence)
        return expose(lib, name, as_tool=_optional(args, "as_tool"))


def _text(args: Mapping[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{key} is required (a non-empty string)")
    return value


def _optional(args: Mapping[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"{key} must be a string")
    return value


_NAME = {"type": "string", "description": "An item name: 1-64 of a-z, 0-9 and -."}
_EVIDENCE = {"type": "string", "description": "What shows it works (recorded as is)."}
_REASON = {"type": "string", "description": "Why (recorded in the commit)."}

SCHEMAS: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "draft_skill": ("Capture a new skill as a draft (drafts/NAME, one commit); a draft is "
                    "never listed, but load_skill finds it by name.",
                    {"name": _NAME, "description": {"type": "string"},
                     "body": {"type": "string", "description": "SKILL.md after the "
                              "frontmatter (Markdown)."}, "evidence": _EVIDENCE},
                    ["name", "description", "body"]),
    "draft_recipe": ("Capture a new recipe (a script with a manifest) as a draft; it runs "
                     "only once promoted, exposed and approved by a person.",
                     {"name": _NAME, "description": {"type": "string"},
                      "script": {"type": "string", "description": "The entry point's code."},
                      "environment": {"type": "string", "enum": list(ENTRYPOINTS)},
                      "execution": {"type": "string", "enum": ["sync", "async"]},
                      "inputs": {"type": "object"}, "result": {"type": "string"},
                      "effects": {"type": "object"}, "timeout": {"type": "integer"},
                      "evidence": _EVIDENCE},
                     ["name", "description", "script"]),
    "promote": ("Promote a draft to skills/ or recipes/ (digest unchanged, one commit).",
                {"name": _NAME, "evidence": _EVIDENCE}, ["name"]),
    "defer": ("Record a decision to look at a draft again later; the draft stays.",
              {"name": _NAME, "reason": _REASON, "until": {"type": "string",
               "description": "YYYY-MM-DD"}, "evidence": _EVIDENCE}, ["name", "reason"]),
    "discard": ("Remove a draft (one commit; history keeps it).",
                {"name": _NAME, "reason": _REASON, "evidence": _EVIDENCE},
                ["name", "reason"]),
    "expose": ("Expose a retained recipe as a tool (tools.yaml); it still runs only once a "
               "person approves its digest.",
               {"name": _NAME, "as_tool": {"type": "string"}}, ["name"]),
}


def curation_schema(tool: str) -> tuple[str, dict[str, Any]]:
    description, properties, required = SCHEMAS[tool]
    return description, {"type": "object", "properties": properties, "required": required,
                         "additionalProperties": False}
