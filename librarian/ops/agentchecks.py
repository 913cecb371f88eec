"""What ``check`` warns about so agents read every skill as the library means it.

- A skill over the MCP skills extension's limits (512 files, 16 MiB) is not served over
  ``skills/list``; ``check`` says which and why.
- A frontmatter scalar YAML 1.1 (PyYAML, ``check`` itself) and YAML 1.2 (the hosts of the
  skills extension) read differently (``yes``, ``on``, ``1:30``, ``2026-01-02``, ``012``):
  the key is named, so the author can quote it.
- Two visible skills with one directory name (a retained ``pdf`` and a managed
  ``team:pdf``): agents that show the bare name (the Claude Code plugin route, the
  extension's frontmatter) cannot tell them apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from librarian.core.model import KIND_DIRS, SOURCES_DIR
from librarian.errors import UsageError
from librarian.formats.skillmd import decode_text, split_frontmatter
from librarian.formats.yaml12 import ambiguous_keys

#: The skills extension's per-skill limits (hosts accept at least these).
MAX_FILES = 512
MAX_BYTES = 16 * 1024 * 1024

Entry = tuple[str, int, Callable[[], bytes]]


def skill_paths(items: Iterable[str]) -> list[str]:
    skills_dir = KIND_DIRS["skill"]
    return [p for p in items if p.startswith((f"{skills_dir}/", f"{SOURCES_DIR}/"))]


def agent_warnings(items: Mapping[str, Sequence[Entry]], hidden: Iterable[str],
                   sizes: Mapping[str, tuple[int, int]]) -> list[str]:
    """Warnings about what agents will read, for every skill item among ``items``;
    ``sizes`` holds each item's (files, bytes), counted where its files were read."""
    warnings: list[str] = []
    bare: dict[str, list[str]] = {}
    hidden_names = set(hidden)
    for path in skill_paths(items):
        entries = items[path]
        manifest = next((e for e in entries if e[0] == f"{path}/SKILL.md"), None)
        if manifest is None:
            continue  # a recipe under sources/, or an invalid item check reports anyway
        count, total = sizes.get(path, (0, 0))
        if count > MAX_FILES or total > MAX_BYTES:
            warnings.append(f"{path}: {count} files, {total} bytes: over the MCP skills "
                            f"extension's limits ({MAX_FILES} files, {MAX_BYTES} bytes), so "
                            "`librarian mcp` does not list it in skills/list")
        warnings.extend(_yaml_warnings(path, manifest[2]()))
        name = path.rsplit("/", 1)[-1]
        full = name if path.startswith(KIND_DIRS["skill"] + "/") else \
            f"{path.split('/')[1]}:{name}"
        if full not in hidden_names:
            bare.setdefault(name, []).append(path)
    for name, paths in sorted(bare.items()):
        if len(paths) > 1:
            warnings.append(f"{', '.join(paths)}: visible skills named {name!r} more than "
                            "once; agents that show the bare name cannot tell them apart "
                            "(listings name them SOURCE:NAME; hide or retire one)")
    return warnings


def _yaml_warnings(path: str, data: bytes) -> list[str]:
    text = decode_text(data, "SKILL.md", [])
    parts = split_frontmatter(text) if text is not None else None
    if parts is None:
        return []
    try:
        keys = ambiguous_keys(parts[0], f"{path}/SKILL.md frontmatter")
    except UsageError:
        return []  # invalid YAML is check's problem already
    return [f"{path}/SKILL.md: frontmatter {key!r} is read differently by YAML 1.1 and YAML "
            "1.2 (agents read 1.2: quote the value to mean a string)" for key in keys]
