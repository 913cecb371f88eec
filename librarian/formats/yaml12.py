"""Frontmatter as YAML 1.2's core schema reads it, for what agents are sent as JSON.

PyYAML resolves plain scalars by YAML 1.1: ``yes``/``no``/``on``/``off`` are booleans,
``1:30`` is a sexagesimal number, ``2026-01-02`` a date, ``012`` octal. Hosts of the MCP
skills extension (and every YAML 1.2 reader) read those as the strings ``"yes"``,
``"1:30"``, ``"2026-01-02"`` and the integer 12, and verify a served entry's frontmatter
against their own reading of SKILL.md. ``load_core`` reads the text with the core
schema's resolvers only (null, booleans, integers in base 10, ``0o`` and ``0x``, floats;
the loader is ``yamlio.core_loader``, so SKILL.md's own parsing uses it too);
``ambiguous_keys`` names the keys whose value the two readings disagree about, for
``check`` to warn about. Only plain data is read (``yamlio`` judges tags and aliases).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from librarian.formats.yamlio import load_yaml


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
