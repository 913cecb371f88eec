"""A tool call's arguments checked against the JSON Schema the tool advertises, before
anything runs: unknown keys, missing required ones, wrong types (a boolean is not a
number, ``5`` is not a name), values outside an ``enum`` or below a ``minimum``, and NUL
in any string are usage errors (a tool error naming the argument), never an internal
error and never a half-started run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from librarian.errors import UsageError

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "object": (dict,), "array": (list,),
}


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    for name, kinds in _TYPES.items():
        if isinstance(value, kinds) and not (isinstance(value, bool) and name != "boolean"):
            return name
    return type(value).__name__


def _no_nul(value: object, where: str) -> None:
    if isinstance(value, str):
        if "\x00" in value:
            raise UsageError(f"argument {where}: NUL is not allowed in a string")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _no_nul(key, where)
            _no_nul(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _no_nul(item, f"{where}[{index}]")


def check_arguments(tool: str, arguments: Mapping[str, Any], schema: Mapping[str, Any]
                    ) -> None:
    """Raise a usage error naming the first argument ``schema`` does not accept."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    unknown = sorted(set(arguments) - set(properties))
    if unknown and schema.get("additionalProperties") is False:
        raise UsageError(f"{tool}: unknown argument {unknown[0]!r}",
                         hint="accepted: " + (", ".join(sorted(properties)) or "none"))
    for name in schema.get("required") or ():
        if name not in arguments:
            raise UsageError(f"{tool}: argument {name!r} is required")
    for name, value in arguments.items():
        spec = properties.get(name) or {}
        wanted = spec.get("type")
        got = _type_name(value)
        if isinstance(wanted, str) and got != wanted and not (
                wanted == "number" and got == "integer"):
            raise UsageError(f"{tool}: argument {name!r} must be {wanted}, got {got}")
        if "enum" in spec and value not in spec["enum"]:
            raise UsageError(f"{tool}: argument {name!r} must be one of "
                             + ", ".join(map(str, spec["enum"])))
        minimum = spec.get("minimum")
        if minimum is not None and isinstance(value, (int, float)) and value < minimum:
            raise UsageError(f"{tool}: argument {name!r} must be at least {minimum}")
        _no_nul(value, repr(name))
