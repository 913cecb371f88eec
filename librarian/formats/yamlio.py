"""YAML enters through here: safe loading only, with a size limit, and deterministic dumps."""

from __future__ import annotations

from typing import Any

import yaml

from librarian.errors import UsageError

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

MAX_MANIFEST_BYTES = 1024 * 1024


def load_yaml(data: bytes | str, what: str, *, max_bytes: int = MAX_MANIFEST_BYTES) -> Any:
    """Parse one YAML document safely; errors name ``what`` (usually a path)."""
    size = len(data.encode("utf-8") if isinstance(data, str) else data)
    if size > max_bytes:
        raise UsageError(f"{what} is {size} bytes; the limit is {max_bytes}", path=what)
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"{what} is not valid UTF-8: {exc}", path=what) from None
    try:
        return yaml.load(data, Loader=_Loader)  # noqa: S506 - a safe loader
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        # PyYAML raises plain ValueError for e.g. an impossible date (2024-13-45).
        detail = " ".join(str(exc).split())
        raise UsageError(f"{what} is not valid YAML: {detail}", path=what) from None


def dump_yaml(document: Any) -> bytes:
    """Stable formatting (sorted keys, block style) so diffs of written files are reviewable."""
    text: str = yaml.dump(
        document,
        Dumper=_Dumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=100,
    )
    return text.encode("utf-8")
