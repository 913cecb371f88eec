"""Exposed tools for an agent: each ``tools.yaml`` entry as a tool definition (description
from the recipe's contract, a JSON Schema derived from its ``inputs``) and a call through
the very gate ``run`` uses (``gate.runner.start_run``), never with approval: an agent can
not approve a digest, only a person can (``librarian approve``). Async tools return their
run id at once; ``run_status`` / ``wait_run`` report it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from librarian.core.jsonable import with_times
from librarian.errors import UsageError
from librarian.gate.runner import start_run
from librarian.gate.runs import RunRecord, refresh, result_receipt, run_dir_of, wait_run
from librarian.gate.tools import ToolContract
from librarian.library import Library
from librarian.prompt.entries import Registry

JSON_TYPES = {"string": "string", "integer": "integer", "number": "number",
              "boolean": "boolean", "path": "string"}
STDERR_TAIL = 4000  # characters of stderr put into a sync tool's text result
MAX_WAIT = 600.0  # seconds one wait_run call may block


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    name: str
    description: str
    input_schema: dict[str, Any]


def input_schema(contract: ToolContract) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments: one property per declared input (``path`` is
    a string), required inputs required, defaults stated, nothing else accepted."""
    properties: dict[str, Any] = {}
    required = []
    for spec in contract.inputs:
        prop: dict[str, Any] = {"type": JSON_TYPES.get(spec.type, "string")}
        text = spec.description or ""
        if spec.type == "path":
            text = (text + " " if text else "") + "(a file system path, relative to the " \
                "server's working directory or absolute)"
        if text:
            prop["description"] = text
        if spec.default is not None:
            prop["default"] = spec.default
        properties[spec.name] = prop
        if spec.required:
            required.append(spec.name)
    return object_schema(properties, required)


def object_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A JSON Schema object of exactly ``properties`` (``required`` among them)."""
    schema: dict[str, Any] = {"type": "object", "properties": properties,
                              "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def tool_description(contract: ToolContract) -> str:
    parts = [contract.description or f"The recipe {contract.recipe}."]
    if contract.result:
        parts.append(f"Result: {contract.result}")
    if contract.effects:
        effects = ", ".join(f"{k} {v}" for k, v in sorted(contract.effects.items()))
        parts.append(f"Effects: {effects}.")
    mode = contract.execution or "sync"
    parts.append("Execution: async (returns a run id at once; run_status or wait_run "
                 "report the result)." if mode == "async" else
                 "Execution: sync (returns stdout, the tail of stderr and the exit code).")
    if contract.status != "ok":
        parts.append(f"Currently refused: {contract.reason}.")
    parts.append("Runs through librarian's execution gate (approval by digest).")
    return " ".join(parts)


def tool_definitions(registry: Registry) -> list[ToolDefinition]:
    return [ToolDefinition(c.name, tool_description(c), input_schema(c))
            for c in registry.tools]


def raw_arguments(arguments: Mapping[str, Any] | None) -> dict[str, str]:
    """JSON arguments as the strings the gate types (``--arg K=V`` gives the same)."""
    out = {}
    for key, value in (arguments or {}).items():
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            out[key] = str(value)
        else:
            raise UsageError(f"input {key}: expected a string, number or boolean, got "
                             f"{type(value).__name__}")
    return out


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool call returns: the text the agent reads, the receipt as structured
    content, and whether the call failed (a non-zero exit, a timeout, a lost run)."""

    text: str
    document: dict[str, Any]
    failed: bool


def call_tool(library: Library, name: str, arguments: Mapping[str, Any] | None,
              cwd: Path) -> ToolOutcome:
    """Run the tool ``name`` through the gate (GateRefusal, exit 5, when it refuses)."""
    record = start_run(library, name, raw_arguments(arguments), approve_now=False, cwd=cwd)
    if record.mode == "async" and not record.terminal:
        document = with_times({"kind": "run_launched", "run_id": record.run_id,
                               "name": record.name, "status": record.status,
                               "digest": record.digest, "started": record.started,
                               "enforced": record.enforced})
        return ToolOutcome(f"launched run {record.run_id} ({record.name}); call "
                           f"wait_run or run_status with run_id {record.run_id}", document,
                           False)
    return outcome(library, record)


def outcome(library: Library, record: RunRecord) -> ToolOutcome:
    """The ``run_result`` receipt as structured content, and as text: stdout, the tail of
    stderr, the status and exit code."""
    receipt = result_receipt(library, record)
    lines = []
    if receipt.output:
        lines.append(receipt.output.rstrip("\n"))
    tail = receipt.stderr[-STDERR_TAIL:]
    if tail:
        lines.append("--- stderr (tail) ---\n" + tail.rstrip("\n"))
    exit_text = "still " + record.status if not record.terminal else (
        f"{record.status}, exit code {record.exit_code}")
    lines.append(f"--- run {record.run_id}: {exit_text} ---")
    # the moments as every JSON document has them: `started` and `started_at`, …
    return ToolOutcome("\n".join(lines), with_times(receipt.to_json()),
                       record.terminal and record.status != "succeeded")


def knows_run(library: Library, run_id: str) -> bool:
    """Whether ``library``'s gate recorded the run ``run_id``."""
    try:
        run_dir_of(library, run_id)
    except UsageError:
        return False
    return True


def run_status(library: Library, run_id: str) -> ToolOutcome:
    record = refresh(library, run_dir_of(library, run_id))
    if record is None:
        raise UsageError(f"the record of run {run_id} is unreadable")
    return outcome(library, record)


def wait_for_run(library: Library, run_id: str, timeout: float | None) -> ToolOutcome:
    limit = MAX_WAIT if timeout is None else max(0.0, min(float(timeout), MAX_WAIT))
    return outcome(library, wait_run(library, run_id, limit))
