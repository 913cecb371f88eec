"""Agents reading the library directly (spec §8): what ``librarian mcp`` serves, as plain
functions over the library (``skills``, ``tools``, ``curation``), the MCP server over the
official SDK (``server``: the only module that imports ``mcp``, and only ``librarian mcp``
imports it), and the Codex configuration export (``codex``). The Claude Code manifests are
kept by every commit (``librarian.agents.claude_manifests``).

May import: ``librarian.ops`` and everything below it; ``server`` also the ``mcp`` SDK."""
