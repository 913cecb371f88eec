"""SKILL.md in the Agent Skills format (agentskills.io): YAML frontmatter, then Markdown.

Parsing never rewrites the bytes (the digest covers them); it only reads and judges them.
Every problem is collected so one run tells an author everything to fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from librarian.core.model import SkillManifest
from librarian.core.names import name_problem
from librarian.errors import UsageError, ValidationError
from librarian.formats.yamlio import load_yaml

SKILL_FILE = "SKILL.md"
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
KNOWN_KEYS = frozenset(
    {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
)

_BOM = "\ufeff"
# Fences are whole lines "---" (trailing blanks and CR tolerated, so CRLF files parse).
_FRONTMATTER_RE = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$(?:\n|\Z)", re.S | re.M)
_OPENING_RE = re.compile(r"\A---[ \t]*\r?(?:\n|\Z)")


def validation_error(
    where: str, what: str, problems: Sequence[str], *, hint: str | None = None
) -> ValidationError:
    """One-line message (first problem and a count); every problem stays in ``problems``."""
    first = problems[0] if problems else "unknown problem"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    prefix = f"{where}: " if where else ""
    return ValidationError(
        f"{prefix}{what}: {first}{more}",
        problems=tuple(problems),
        hint=hint,
        path=where or None,
    )


def type_name(value: object) -> str:
    """A YAML-ish name for a value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, Mapping):
        return "mapping"
    return type(value).__name__


def load_yaml_collecting(text: str, what: str, problems: list[str]) -> Any:
    """``load_yaml`` that records a failure in ``problems`` and returns None instead."""
    try:
        return load_yaml(text, what)
    except UsageError as exc:  # yamlio maps every PyYAML failure to UsageError
        problems.append(exc.message)
    return None


def decode_text(data: bytes, what: str, problems: list[str]) -> str | None:
    """UTF-8 text without a leading BOM, or None (with a problem) when it is not UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(f"{what} is not valid UTF-8 (byte {exc.start})")
        return None
    return text[1:] if text.startswith(_BOM) else text


def split_frontmatter(text: str) -> tuple[str, str] | None:
    """(frontmatter YAML, body) or None when the text has no closed frontmatter block."""
    match = _FRONTMATTER_RE.match(text)
    if match is None:
        return None
    return match.group(1), text[match.end() :]


def parse_skill_md(data: bytes, where: str) -> SkillManifest:
    """Parse and validate a SKILL.md; raise ValidationError listing every problem."""
    problems: list[str] = []
    manifest = _parse(data, problems)
    if manifest is None or problems:
        raise validation_error(where, f"invalid {SKILL_FILE}", problems)
    return manifest


def _parse(data: bytes, problems: list[str]) -> SkillManifest | None:
    text = decode_text(data, SKILL_FILE, problems)
    if text is None:
        return None
    parts = split_frontmatter(text)
    if parts is None:
        if _OPENING_RE.match(text):
            problems.append("frontmatter: the opening '---' line has no closing '---' line")
        else:
            problems.append("frontmatter: SKILL.md must start with a '---' line")
        return None
    frontmatter, body = parts
    document = load_yaml_collecting(frontmatter, "frontmatter", problems)
    if problems:
        return None
    if document is None:
        document = {}
    if not isinstance(document, Mapping):
        problems.append(f"frontmatter: must be a mapping, got {type_name(document)}")
        return None
    return _manifest(document, body, problems)


def _manifest(doc: Mapping[Any, Any], body: str, problems: list[str]) -> SkillManifest | None:
    unknown: list[str] = []
    for key in doc:
        if not isinstance(key, str):
            problems.append(f"frontmatter: key {key!r} is not a string")
        elif key not in KNOWN_KEYS:
            unknown.append(key)

    name = doc.get("name")
    if name is None:
        problems.append("name: is required")
    elif not isinstance(name, str):
        problems.append(f"name: must be a string, got {type_name(name)}")
    else:
        problem = name_problem(name)
        if problem is not None:
            problems.append(f"name: {name!r} {problem}")

    description = doc.get("description")
    if description is None:
        problems.append("description: is required")
    elif not isinstance(description, str):
        problems.append(f"description: must be a string, got {type_name(description)}")
    elif not description.strip():
        problems.append("description: must not be blank")
    elif len(description) > MAX_DESCRIPTION:
        problems.append(
            f"description: must be 1-{MAX_DESCRIPTION} characters, got {len(description)}"
        )

    license_ = _optional_string(doc, "license", problems)
    compatibility = _optional_string(doc, "compatibility", problems)
    if compatibility is not None and len(compatibility) > MAX_COMPATIBILITY:
        problems.append(
            f"compatibility: must be at most {MAX_COMPATIBILITY} characters, "
            f"got {len(compatibility)}"
        )
    allowed_tools = _optional_string(doc, "allowed-tools", problems)
    metadata = _metadata(doc.get("metadata"), problems)

    if problems or not isinstance(name, str) or not isinstance(description, str):
        return None
    return SkillManifest(
        name=name,
        description=description,
        license=license_,
        compatibility=compatibility,
        metadata=metadata,
        allowed_tools=allowed_tools,
        unknown_keys=tuple(sorted(unknown)),
        body=body,
    )


def _optional_string(doc: Mapping[Any, Any], key: str, problems: list[str]) -> str | None:
    value = doc.get(key)
    if value is None or isinstance(value, str):
        return value
    problems.append(f"{key}: must be a string, got {type_name(value)}")
    return None


def _metadata(value: object, problems: list[str]) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        problems.append(f"metadata: must be a mapping of strings, got {type_name(value)}")
        return ()
    pairs: list[tuple[str, str]] = []
    for key, item in value.items():
        if not isinstance(key, str):
            problems.append(f"metadata: key {key!r} must be a string, got {type_name(key)}")
        elif not isinstance(item, str):
            problems.append(
                f"metadata.{key}: must be a string, got {type_name(item)} (quote the value)"
            )
        else:
            pairs.append((key, item))
    return tuple(pairs)
