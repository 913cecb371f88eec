"""A Markdown note captured as a draft skill: ``retain notes.md --draft``.

A draft is a capture, so a ``.md`` file without frontmatter is not refused: its SKILL.md
is the file's bytes after a frontmatter built from them, ``name`` from the file name
(slugified: ``Meeting Notes.md`` -> ``meeting-notes``) or ``--name``, ``description``
from the first heading, else the first non-blank line, else the name. ``promote`` then
demands a conforming skill (docs/skills.md)."""

from __future__ import annotations

import json
import re

from librarian.formats.skillmd import MAX_DESCRIPTION, MAX_NAME

_HEADING_RE = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$")
#: Names YAML 1.1 would read as a boolean or null unquoted.
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


def slug(text: str) -> str:
    """``text`` as an item name: lowercase a-z, 0-9 and single ``-``, at most 64."""
    lowered = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return lowered[:MAX_NAME].strip("-")


def needs_frontmatter(data: bytes) -> bool:
    """Whether the note is UTF-8 text that does not open with a ``---`` line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False  # the validation says why
    return not text.lstrip("\ufeff").startswith("---")


def description_of(text: str) -> str | None:
    """The first heading's text, else the first non-blank line (stripped), or None."""
    lines = [line.strip() for line in text.splitlines()]
    for line in lines:
        match = _HEADING_RE.match(line)
        if match and match.group(1).strip():
            return match.group(1).strip()
    return next((line for line in lines if line), None)


def captured_skill_md(data: bytes, name: str) -> bytes:
    """The note's bytes after a frontmatter naming it ``name`` and describing it by its
    first heading or line. Values are JSON strings: valid YAML, read back exactly."""
    text = data.decode("utf-8").lstrip("\ufeff")
    found = "".join(c for c in description_of(text) or "" if c.isprintable())
    description = " ".join(found.split())[:MAX_DESCRIPTION].strip() or name
    plain = re.fullmatch(r"[a-z][a-z0-9-]*", name) and name not in _YAML_WORDS
    head = (f"---\nname: {name if plain else json.dumps(name)}\ndescription: "
            f"{json.dumps(description, ensure_ascii=False)}\n---\n")
    return head.encode("utf-8") + text.encode("utf-8")
