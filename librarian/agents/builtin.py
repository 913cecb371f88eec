"""What ``librarian mcp`` offers besides exposed tools and the curation verbs, as plain data:
the built-in tools (name -> description, JSON Schema properties, required keys), and a
``LibrarianError`` as the one line the command line prints. No MCP SDK here
(``agents/server.py`` is its only importer)."""

from __future__ import annotations

from typing import Any

from librarian.errors import LibrarianError

BUILTIN: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "list_skills": ("The visible skills (name, description, location of SKILL.md), the "
                    "bodies of resident skills, recipes and exposed tools: exactly what "
                    "`librarian prompt --format json` lists, within an optional budget of "
                    "characters (what a budget cuts is said).",
                    {"budget": {"type": "integer", "minimum": 1}}, []),
    "load_skill": ("A skill's committed SKILL.md and the list of its files (hidden skills "
                   "and drafts load by name too).",
                   {"name": {"type": "string"}}, ["name"]),
    "read_skill_file": ("One committed file of a skill, by its path inside the skill "
                        "(progressive disclosure; nothing outside the skill is readable).",
                        {"name": {"type": "string"}, "path": {"type": "string"}},
                        ["name", "path"]),
    "search_skills": ("Search the visible skills by name, description and body, best "
                      "first (those list_skills leaves out for its budget included); each "
                      "hit's SKILL.md loads with load_skill or its uri.",
                      {"query": {"type": "string"},
                       "limit": {"type": "integer", "minimum": 1, "maximum": 50}},
                      ["query"]),
    "run_status": ("The status (and, once ended, the result) of a tool run by its run id.",
                   {"run_id": {"type": "string"}}, ["run_id"]),
    "wait_run": ("Wait for a tool run to end (at most timeout seconds, 600 at most) and "
                 "return its result or its status so far.",
                 {"run_id": {"type": "string"},
                  "timeout": {"type": "number", "minimum": 0}}, ["run_id"]),
}


def error_text(exc: LibrarianError) -> str:
    """The command line's own error line: ``librarian: error: MESSAGE (hint: HINT)``."""
    hint = f" (hint: {' '.join(exc.hint.split())})" if exc.hint else ""
    return f"librarian: error: {' '.join(exc.message.split())}{hint}"
