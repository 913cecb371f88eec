"""YAML enters through here: safe loading only, with a size limit, and deterministic dumps.

Plain data only (spec §2): no explicit tags (``!!binary``, ``!!set``, ``!foo``) and at most
``MAX_ALIASES`` aliases, so a billion-laughs chain, which PyYAML shares but other clients
expand, never enters a library. The event scan runs only when the text could hold an
anchor or a tag (``&`` or ``!``), so the large lock file is parsed once.

PyYAML is imported by the functions that parse or dump, not with this module: the lock's
fixed shape (``formats/lockfile.py``) and the configuration remembered by blob id
(``store/snapshot.py``) are read without it, so a warm ``status`` or ``update`` never
loads it (~11 ms of start-up).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from librarian.errors import UsageError

MAX_MANIFEST_BYTES = 1024 * 1024
#: More aliases than this in one document is refused (a real manifest needs none).
MAX_ALIASES = 16


def _plain_data_problem(text: str) -> str | None:
    """Why the document is not plain data (an explicit tag, too many aliases), or None."""
    if "&" not in text and "!" not in text:
        return None
    import yaml  # start-up cost: see the module docstring

    aliases = 0
    for event in yaml.parse(text, Loader=_loader()):
        tag = getattr(event, "tag", None)
        implicit = getattr(event, "implicit", True)
        explicit = implicit is False or (isinstance(implicit, tuple) and not any(implicit))
        if tag is not None and (explicit or tag == "!"):
            return f"holds the YAML tag {tag!r} (only plain data is read)"
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_ALIASES:
                return f"holds more than {MAX_ALIASES} YAML aliases (an alias bomb?)"
    return None


def _loader() -> Any:
    import yaml  # start-up cost: see the module docstring

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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
    import yaml  # start-up cost: see the module docstring

    try:
        problem = _plain_data_problem(data)
        if problem is not None:
            raise UsageError(f"{what} {problem}", path=what)
        return yaml.load(data, Loader=_loader())  # noqa: S506 - a safe loader
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        # PyYAML raises plain ValueError for e.g. an impossible date (2024-13-45).
        detail = " ".join(str(exc).split())
        raise UsageError(f"{what} is not valid YAML: {detail}", path=what) from None


def mapping_of(value: object, what: str) -> Mapping[str, Any]:
    """A loaded value that must be a mapping with string keys (absent: empty)."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise UsageError(f"{what} must be a mapping")
    return value


def dump_yaml(document: Any) -> bytes:
    """Stable formatting (sorted keys, block style) so diffs of written files are reviewable."""
    import yaml  # start-up cost: see the module docstring

    text: str = yaml.dump(
        document,
        Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=100,
    )
    return text.encode("utf-8")
