"""Frontmatter as YAML 1.2's core schema reads it, for what agents are sent as JSON.

PyYAML resolves plain scalars by YAML 1.1: ``yes``/``no``/``on``/``off`` are booleans,
``1:30`` is a sexagesimal number, ``2026-01-02`` a date, ``012`` octal. Hosts of the MCP
skills extension (and every YAML 1.2 reader) read those as the strings ``"yes"``,
``"1:30"``, ``"2026-01-02"`` and the integer 12, and verify a served entry's frontmatter
against their own reading of SKILL.md. ``load_core`` reads the text with the core
schema's resolvers only (null, booleans, integers in base 10, ``0o`` and ``0x``, floats);
``ambiguous_keys`` names the keys whose value the two readings disagree about, for
``check`` to warn about. Only plain data is read (``yamlio`` judges tags and aliases).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from librarian.formats.yamlio import load_yaml

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
_loader_class: Any = None


def core_loader() -> Any:
    """A safe loader class resolving plain scalars by YAML 1.2's core schema."""
    global _loader_class
    if _loader_class is not None:
        return _loader_class
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class CoreLoader(base):  # type: ignore[valid-type,misc]
        """SafeLoader with the YAML 1.2 core schema's implicit resolvers only."""

    CoreLoader.yaml_implicit_resolvers = {}
    for tag, pattern, first in (
            ("tag:yaml.org,2002:null", _NULL, ["~", "n", "N", ""]),
            ("tag:yaml.org,2002:bool", _BOOL, list("tTfF")),
            ("tag:yaml.org,2002:int", _INT, list("-+0123456789")),
            ("tag:yaml.org,2002:float", _FLOAT, list("-+.0123456789"))):
        CoreLoader.add_implicit_resolver(tag, pattern, first)

    def construct_int(loader: Any, node: Any) -> int:
        text = loader.construct_scalar(node)
        if text.startswith("0o"):
            return int(text[2:], 8)
        if text.startswith("0x"):
            return int(text[2:], 16)
        return int(text, 10)

    def construct_float(loader: Any, node: Any) -> float:
        text = str(loader.construct_scalar(node))
        bare = text.lstrip("+-").lower()
        if bare == ".inf":
            return -math.inf if text.startswith("-") else math.inf
        if bare == ".nan":
            return math.nan
        return float(text)

    def construct_bool(loader: Any, node: Any) -> bool:
        return str(loader.construct_scalar(node)).lower() == "true"

    CoreLoader.add_constructor("tag:yaml.org,2002:int", construct_int)
    CoreLoader.add_constructor("tag:yaml.org,2002:float", construct_float)
    CoreLoader.add_constructor("tag:yaml.org,2002:bool", construct_bool)
    _loader_class = CoreLoader
    return CoreLoader


def load_core(text: str, what: str) -> Any:
    """``text`` read by YAML 1.2's core schema (plain data only, as ``load_yaml``)."""
    return load_yaml(text, what, core=True)


def ambiguous_keys(text: str, what: str) -> list[str]:
    """The dotted keys whose scalar YAML 1.1 and YAML 1.2 read differently."""
    old, new = load_yaml(text, what), load_core(text, what)
    found: list[str] = []
    _differences(old, new, "", found)
    return found


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return bool(a == b)


def _differences(old: Any, new: Any, path: str, found: list[str]) -> None:
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key_old, key_new in zip(old, new, strict=False):
            label = f"{path}.{key_new}" if path else str(key_new)
            if not _same(key_old, key_new):
                found.append(label)
                continue
            _differences(old[key_old], new[key_new], label, found)
        return
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            _differences(a, b, f"{path}[{index}]", found)
        return
    if not _same(old, new):
        found.append(path or "(document)")
