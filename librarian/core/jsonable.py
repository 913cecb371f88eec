"""Frozen dataclasses, tuples and mappings as plain JSON values (the ``--json`` documents)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from librarian.core.receipts import Receipt


def to_jsonable(value: Any) -> Any:
    if isinstance(value, Receipt):
        return value.to_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # a field marked ``metadata={"json": False}`` (file contents, say) stays out
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.metadata.get("json", True)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


#: Fields holding a moment as Unix seconds. In every JSON document each is whole seconds,
#: with ``<field>_at`` beside it: the same moment in ISO 8601, UTC (docs/commands.md).
TIME_FIELDS = frozenset(("time", "started", "ended", "last_used", "admitted"))


def iso_utc(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def with_times(value: Any) -> Any:
    """``value`` with every time field as whole Unix seconds and its ISO 8601 twin."""
    if isinstance(value, list):
        return [with_times(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in TIME_FIELDS and isinstance(item, int | float) and not isinstance(item, bool):
            out[key] = int(item)
            out[f"{key}_at"] = iso_utc(item)
        elif key in TIME_FIELDS and item is None:
            out[key] = None
            out[f"{key}_at"] = None
        else:
            out[key] = with_times(item)
    return out
