"""SKILL.md in the Agent Skills format (agentskills.io): YAML frontmatter, then Markdown.

Parsing never rewrites the bytes (the digest covers them); it only reads and judges them.
What makes a skill unusable (no closed frontmatter, YAML that is not plain data, no
description) is a problem; a rule of the format that clients tolerate, broken, is a
``Nonconformity`` naming the rule (spec §2). Both are collected, so one run tells an
author everything to fix.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from librarian.core.manifests import Nonconformity, SkillManifest
from librarian.errors import UsageError, ValidationError
from librarian.formats.yamlio import load_yaml

SKILL_FILE = "SKILL.md"
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
MAX_NAME = 64
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
    """One-line message listing every problem ("; " between them); each also stays in
    ``problems`` (the JSON error document carries the list)."""
    listed = "; ".join(problems) if problems else "unknown problem"
    prefix = f"{where}: " if where else ""
    return ValidationError(
        f"{prefix}{what}: {listed}",
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


def load_yaml_collecting(text: str, what: str, problems: list[str], *,
                         core: bool = False) -> Any:
    """``load_yaml`` that records a failure in ``problems`` and returns None instead."""
    try:
        return load_yaml(text, what, core=core)
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
    # Read as agents' hosts read it (YAML 1.2: `yes` and dates are strings), so what
    # librarian lists is what they load; `check` names the keys the two readings differ on.
    document = load_yaml_collecting(frontmatter, "frontmatter", problems, core=True)
    if problems:
        return None
    if document is None:
        document = {}
    if not isinstance(document, Mapping):
        problems.append(f"frontmatter: must be a mapping, got {type_name(document)}")
        return None
    return _manifest(document, body, problems)


def _manifest(doc: Mapping[Any, Any], body: str, problems: list[str]) -> SkillManifest | None:
    """What a client needs (a description) is required; every other rule of the format
    breaks into a Nonconformity, and the value is read as a tolerant client would."""
    found: list[Nonconformity] = []
    unknown = sorted(str(key) for key in doc if key not in KNOWN_KEYS)
    if unknown:
        found.append(Nonconformity("unexpected-fields", "frontmatter keys outside the Agent "
                                   f"Skills spec, kept as they are: {', '.join(unknown)}"))
    name = _name(doc, found)

    description = doc.get("description")
    if description is None:
        problems.append("description: is required")
    elif not isinstance(description, str):
        problems.append(f"description: must be a string, got {type_name(description)}")
    elif not description.strip():
        problems.append("description: must not be blank")
    elif len(description) > MAX_DESCRIPTION:
        found.append(Nonconformity("description-length", f"description is {len(description)} "
                                   f"characters (the limit is {MAX_DESCRIPTION})"))

    license_ = _optional_string(doc, "license", found)
    compatibility = _optional_string(doc, "compatibility", found)
    if compatibility is not None and len(compatibility) > MAX_COMPATIBILITY:
        found.append(Nonconformity("compatibility-length", f"compatibility is "
                                   f"{len(compatibility)} characters (the limit is "
                                   f"{MAX_COMPATIBILITY})"))
    allowed_tools = _allowed_tools(doc.get("allowed-tools"), found)
    metadata = _metadata(doc.get("metadata"), found)

    if problems or not isinstance(description, str):
        return None
    return SkillManifest(
        name=name,
        description=description,
        license=license_,
        compatibility=compatibility,
        metadata=metadata,
        allowed_tools=allowed_tools,
        unknown_keys=tuple(unknown),
        body=body,
        nonconforming=tuple(found),
    )


def _name(doc: Mapping[Any, Any], found: list[Nonconformity]) -> str:
    """The frontmatter name ("" when there is none), judged as the reference validator
    judges it; whether it equals the directory is ``directory_findings``' part."""
    name = doc.get("name")
    if name is None:
        found.append(Nonconformity("name-required", "frontmatter has no name"))
        return ""
    if not isinstance(name, str) or not name.strip():
        got = "a blank string" if isinstance(name, str) else type_name(name)
        found.append(Nonconformity("name-empty", f"name must be a non-empty string, got {got}"))
        return name if isinstance(name, str) else ""
    shown = unicodedata.normalize("NFKC", name.strip())
    if len(shown) > MAX_NAME:
        found.append(Nonconformity("name-length", f"name {shown!r} is {len(shown)} characters "
                                   f"(the limit is {MAX_NAME})"))
    if shown != shown.lower():
        found.append(Nonconformity("name-lowercase", f"name {shown!r} must be lowercase"))
    if shown.startswith("-") or shown.endswith("-"):
        found.append(Nonconformity("name-hyphen-ends",
                                   f"name {shown!r} starts or ends with a hyphen"))
    if "--" in shown:
        found.append(Nonconformity("name-consecutive-hyphens",
                                   f"name {shown!r} holds consecutive hyphens"))
    if not all(c.isalnum() or c == "-" for c in shown):
        found.append(Nonconformity("name-characters", f"name {shown!r} may hold only letters, "
                                   "digits and hyphens"))
    return name


def directory_findings(manifest: SkillManifest, directory: str) -> tuple[Nonconformity, ...]:
    """The frontmatter name against the item's directory (its identity)."""
    name = unicodedata.normalize("NFKC", manifest.name.strip())
    if not name or name == unicodedata.normalize("NFKC", directory):
        return ()
    return (Nonconformity("name-directory", f"name {name!r} differs from the directory "
                          f"{directory!r}, which names the item"),)


def _optional_string(doc: Mapping[Any, Any], key: str,
                     found: list[Nonconformity]) -> str | None:
    value = doc.get(key)
    if value is None or isinstance(value, str):
        return value
    found.append(Nonconformity(f"{key}-type", f"{key} must be a string, got {type_name(value)} "
                               "(ignored)"))
    return None


def _allowed_tools(value: object, found: list[Nonconformity]) -> str | None:
    """A space-separated string; a YAML list (as Claude Code writes it) is read as one."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        found.append(Nonconformity("allowed-tools-type", "allowed-tools is a YAML list (the "
                                   "format says a space-separated string)"))
        return " ".join(value)
    found.append(Nonconformity("allowed-tools-type", f"allowed-tools must be a string, got "
                               f"{type_name(value)} (ignored)"))
    return None


def _metadata(value: object, found: list[Nonconformity]) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        found.append(Nonconformity("metadata-type", f"metadata must be a mapping of strings, "
                                   f"got {type_name(value)} (ignored)"))
        return ()
    odd = [str(k) for k, v in value.items() if not isinstance(k, str) or not isinstance(v, str)]
    if odd:
        found.append(Nonconformity("metadata-values", "metadata values must be strings, not "
                                   f"for: {', '.join(odd)} (read as text)"))
    return tuple((str(k), v if isinstance(v, str) else _text(v)) for k, v in value.items())


def _text(value: object) -> str:
    """A non-string metadata value as text, the way the reference validator reads it."""
    return str(value)
