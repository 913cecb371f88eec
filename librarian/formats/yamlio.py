"""YAML enters through here: safe loading only, with a size limit, and deterministic dumps.

Plain data only (spec §2): no explicit tags (``!!binary``, ``!!set``, ``!foo``) and at most
``MAX_ALIASES`` aliases, so a billion-laughs chain, which PyYAML shares but other clients
expand, never enters a library. The event scan runs only when the text could hold an
anchor or a tag (``&`` or ``!``), so the large lock file is parsed once.

PyYAML is imported by the functions that parse or dump, not with this module (~11 ms of
start-up): the lock's fixed shape (``formats/lockfile.py``), the configuration remembered
by blob id (``library/snapshot.py``) and a flat document (``_flat_mapping``: one ``key:
words`` a line, the shape of most SKILL.md frontmatter) are read without it, so a warm
``status``, and an ``update`` of skills whose frontmatter is flat, never load it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from itertools import repeat
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


# -- flat documents: read without PyYAML ---------------------------------------------------

#: Words YAML 1.1 (PyYAML's resolvers) reads as a boolean or null, not as a string.
_WORDS = frozenset(
    w for base in ("yes", "no", "true", "false", "on", "off", "null", "y", "n")
    for w in (base, base.capitalize(), base.upper()))
#: PyYAML and libyaml refuse a plain (implicit) key longer than this.
_MAX_SIMPLE_KEY = 1024


def _plain_word(text: str, *, key: bool) -> bool:
    """Whether ``text`` is a plain scalar YAML can only read as that very string: it starts
    with an ASCII letter (so it is never a number, a date, an indicator, a tag or an
    anchor), is not a YAML 1.1 boolean or null, holds only printable characters (no tab,
    control, format or line-break character: YAML 1.1 breaks lines at NEL, LS and PS too)
    and neither ``: `` nor `` #``, and does not end in a space or ``:``. A key is letters,
    digits, ``-`` and ``_`` only, at most 1,024 of them (both PyYAML loaders refuse a
    longer implicit key). (No regular expression: this module is imported by every
    command, and compiling one costs more than the check.)"""
    if not text or not (text[0].isascii() and text[0].isalpha()) or text in _WORDS:
        return False
    if key:
        if len(text) > _MAX_SIMPLE_KEY:
            return False
        rest = text.replace("-", "").replace("_", "")
        return rest.isascii() and rest.isalnum()
    return text.isprintable() and ": " not in text and " #" not in text and (
        text[-1] not in " :")


def _flat_mapping(text: str) -> dict[str, object] | None:
    """The document, when it is one ``key: value`` a line (blank lines aside) with every
    key a plain scalar YAML reads as that very string, no key twice, and every value such
    a string or an empty ``{}`` or ``[]`` (``tools: {}``): what PyYAML would return for it.
    None for anything else (then PyYAML reads it)."""
    document: dict[str, object] = {}
    for line in text.split("\n"):
        if not line:
            continue
        key, sep, value = line.partition(": ")
        if not sep or key in document or not _plain_word(key, key=True):
            return None
        if value in ("{}", "[]"):
            document[key] = {} if value == "{}" else []
        elif _plain_word(value, key=False):
            document[key] = value
        else:
            return None
    return document or None


class DuplicateKey(Exception):
    """A mapping of the document holds one key twice (raised by the strict loader)."""

    def __init__(self, key: object, first: int, second: int) -> None:
        super().__init__(key, first, second)
        self.key, self.first, self.second = key, first, second


_strict: Any = None


def _loader() -> Any:
    """PyYAML's safe loader (libyaml's when present) that refuses a key given twice in one
    mapping: PyYAML keeps the last one silently, so a second ``agents:`` block would
    replace the policy a reviewer read in the first."""
    global _strict
    if _strict is not None:
        return _strict
    import yaml  # start-up cost: see the module docstring

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class StrictLoader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: dict[object, int] = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue  # `<<: *base`: explicit keys override merged ones
                    key = self.construct_object(key_node, deep=True)
                    line = key_node.start_mark.line + 1
                    try:
                        if key in seen:
                            raise DuplicateKey(key, seen[key], line)
                        seen[key] = line
                    except TypeError:
                        continue  # an unhashable key: the base constructor refuses it
            return super().construct_mapping(node, deep)

    _strict = StrictLoader
    return _strict


def load_yaml(data: bytes | str, what: str, *, max_bytes: int = MAX_MANIFEST_BYTES,
              core: bool = False) -> Any:
    """Parse one YAML document safely; errors name ``what`` (usually a path). ``core``
    resolves plain scalars by YAML 1.2's core schema (``formats.yaml12``), as agents'
    hosts read SKILL.md frontmatter, instead of PyYAML's YAML 1.1."""
    size = len(data.encode("utf-8") if isinstance(data, str) else data)
    if size > max_bytes:
        raise UsageError(f"{what} is {size} bytes; the limit is {max_bytes}", path=what)
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"{what} is not valid UTF-8: {exc}", path=what) from None
    flat = _flat_mapping(data)
    if flat is not None:
        return flat
    import yaml  # start-up cost: see the module docstring

    try:
        problem = _plain_data_problem(data)
        if problem is not None:
            raise UsageError(f"{what} {problem}", path=what)
        if core:
            return yaml.load(data, Loader=core_loader())  # noqa: S506 - a safe loader
        return yaml.load(data, Loader=_loader())  # noqa: S506 - a safe loader
    except DuplicateKey as exc:
        raise UsageError(
            f"{what} holds the key {exc.key!r} twice (lines {exc.first} and {exc.second}); "
            "only one may apply", hint="merge the two into one, then retry",
            path=what) from None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        # PyYAML raises plain ValueError for e.g. an impossible date (2024-13-45).
        detail = " ".join(str(exc).split())
        raise UsageError(f"{what} is not valid YAML: {detail}", path=what) from None


def mapping_of(value: object, what: str) -> Mapping[str, Any]:
    """A loaded value that must be a mapping with string keys (absent: empty)."""
    if value is None:
        return {}
    # map() keeps the check in C: a lock's items are 10,000 keys.
    if not isinstance(value, dict) or not all(map(isinstance, value, repeat(str))):
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


# -- YAML 1.2's core schema (``formats.yaml12``) --------------------------------------

_loader_class: Any = None


def core_loader() -> Any:
    """A safe loader class resolving plain scalars by YAML 1.2's core schema."""
    global _loader_class
    if _loader_class is not None:
        return _loader_class
    import re

    import yaml  # start-up cost: see the module docstring

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class CoreLoader(base):  # type: ignore[valid-type,misc]
        """SafeLoader with the YAML 1.2 core schema's implicit resolvers only."""

    CoreLoader.yaml_implicit_resolvers = {}
    for tag, pattern, first in (
            ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
            ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
            ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
            ("float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                      r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", list("-+.0123456789"))):
        CoreLoader.add_implicit_resolver(f"tag:yaml.org,2002:{tag}", re.compile(pattern),
                                         first)

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
