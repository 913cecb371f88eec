"""Frozen dataclasses, tuples and mappings as plain JSON values (the ``--json`` documents)."""

from __future__ import annotations

import dataclasses
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
