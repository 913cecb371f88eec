"""Helpers for the tests of real-shaped collections: committing a policy by hand, and the
names of the Agent Skills rules the reference validator (skills-ref) checks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from dulwich import porcelain
from dulwich.repo import Repo


def set_policy(library: Path, **fields: Any) -> None:
    """Edit ``policy:`` in library.yaml and commit it with plain git (dulwich's porcelain),
    as a user would."""
    from librarian.formats.config import dump_library_config, load_library_config

    path = library.absolute() / "library.yaml"
    config = load_library_config(path.read_bytes())
    path.write_bytes(dump_library_config(replace(config, policy=replace(config.policy,
                                                                        **fields))))
    with Repo(str(library.absolute())) as repo:
        porcelain.add(repo, paths=[str(path)])
        porcelain.commit(repo, message="policy by hand", author=b"User <user@example.org>",
                         committer=b"User <user@example.org>")


#: skills-ref's messages -> the rule names librarian's warnings use (same checks)
REFERENCE_RULES = (
    ("must start with YAML frontmatter", "frontmatter-missing"),
    ("not properly closed", "frontmatter-unclosed"),
    ("Invalid YAML", "frontmatter-yaml"),
    ("must be a YAML mapping", "frontmatter-mapping"),
    ("Unexpected fields", "unexpected-fields"),
    ("Missing required field in frontmatter: name", "name-required"),
    ("'name' must be a non-empty", "name-empty"),
    ("character limit", "LENGTH"),  # name or description: told apart below
    ("must be lowercase", "name-lowercase"),
    ("start or end with a hyphen", "name-hyphen-ends"),
    ("consecutive hyphens", "name-consecutive-hyphens"),
    ("invalid characters", "name-characters"),
    ("must match skill name", "name-directory"),
    ("Missing required field in frontmatter: description", "description-required"),
    ("'description' must be", "description-empty"),
    ("'compatibility' must be", "compatibility-type"),
)


def reference_rules(errors: list[str]) -> set[str]:
    """The rule names of skills-ref's error messages."""
    rules = set()
    for error in errors:
        for needle, rule in REFERENCE_RULES:
            if needle in error:
                if rule == "LENGTH":
                    rule = {"Skill name": "name-length", "Description": "description-length",
                            "Compatibility": "compatibility-length"}[error.split(" ")[0]
                                                                     if not error.startswith(
                                                                         "Skill name")
                                                                     else "Skill name"]
                rules.add(rule)
                break
        else:
            rules.add("other: " + error)
    return rules


# -- a collection shaped like the public ones -------------------------------------------

LONG = ("Build apps with the Claude API or Anthropic SDK. " * 22).strip()  # > 1024 chars
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8
GOOGLE_EXAMPLE = "AIza" + "SyA1B2C3D4E5F6G7H8I9J0K1L2M3N4O5P6Q"  # a documentation example

#: upstream path -> (files: rel -> bytes or (bytes, mode)), expected librarian rules or
#: a refusal reason ("secret", "name")
SHAPES: dict[str, tuple[dict[str, Any], list[str] | str]] = {
    # anthropics/skills
    "skills/pdf": ({
        "SKILL.md": b"---\nname: pdf\ndescription: Work with PDF files.\nlicense: Proprietary. "
                    b"LICENSE.txt has complete terms\n---\n# PDF\n",
        "LICENSE.txt": b"(c) Example\n",
        "scripts/fill.py": (b"#!/usr/bin/env python3\nprint(1)\n", 0o755),
        "assets/logo.png": PNG,
    }, []),
    "skills/claude-api": ({
        "SKILL.md": f"---\nname: claude-api\ndescription: {LONG}\n---\n# API\n".encode(),
        "shared/models.md": b"# Models\n",
    }, ["description-length"]),
    "template": ({"SKILL.md": b"---\nname: template-skill\ndescription: A template.\n---\n"},
                 ["name-directory"]),
    # openai/skills: hidden collection folders, metadata, agents/openai.yaml
    "skills/.curated/gh-fix-ci": ({
        "SKILL.md": b"---\nname: gh-fix-ci\ndescription: Fix failing CI.\nmetadata:\n"
                    b"  short-description: Fix CI\n---\n# Fix\n",
        "agents/openai.yaml": b"interface:\n  display_name: GH Fix CI\n",
        "scripts/inspect.py": (b"#!/usr/bin/env python3\n", 0o755),
    }, []),
    # claude-plugins-official / trailofbits: nested plugins, lists, extra keys
    "plugins/review/skills/code-review": ({
        "SKILL.md": b"---\nname: code-review\ndescription: Review code.\nuser-invocable: true\n"
                    b"allowed-tools:\n  - Read\n  - Grep\n  - Bash(git diff:*)\n---\n# Review\n",
    }, ["unexpected-fields", "allowed-tools-type"]),
    "plugins/review/skills/windows": ({
        "SKILL.md": b"---\r\nname: windows\r\ndescription: Written on Windows.\r\n---\r\n"
                    b"# Steps\r\n",
        "notes.txt": b"line one\r\nline two\r\n",
    }, []),
    "plugins/scan/skills/firebase-apk-scanner": ({
        "SKILL.md": b"---\nname: firebase-apk-scanner\ndescription: Scan APKs.\n"
                    b"disable-model-invocation: true\n---\n# Scan\n",
        "references/vulnerabilities.md": f"AIza[A-Za-z0-9_-]{{35}}\nExample: {GOOGLE_EXAMPLE}\n"
                                         .encode(),
    }, "secret"),
    # K-Dense: metadata values that are lists
    "scientific-skills/markdown-writing": ({
        "SKILL.md": b"---\nname: markdown-writing\ndescription: Write Markdown.\nmetadata:\n"
                    b"  skill-contributors:\n    - a\n    - b\n---\n",
    }, ["metadata-values"]),
    # vercel-labs: the frontmatter name is not the folder's
    "skills/react-best-practices": ({
        "SKILL.md": b"---\nname: vercel-react-best-practices\ndescription: React.\n"
                    b"metadata:\n  author: vercel\n  version: \"1.0.0\"\n---\n",
        "rules/a.md": b"# Rule\n",
    }, ["name-directory"]),
    # wshobson: version at the top level
    "plugins/agent-teams/skills/parallel-debugging": ({
        "SKILL.md": b"---\nname: parallel-debugging\ndescription: Debug in parallel.\n"
                    b"version: 1.0.2\n---\n",
    }, ["unexpected-fields"]),
    # Composio: a name with capitals and spaces in a valid folder, and an invalid folder
    "composio-skills/ahrefs-automation": ({
        "SKILL.md": b"---\nname: Ahrefs Automation\ndescription: Automate Ahrefs.\n"
                    b"requires:\n  mcp: [rube]\n---\n",
    }, ["unexpected-fields", "name-lowercase", "name-characters", "name-directory"]),
    "composio-skills/google_maps-automation": ({
        "SKILL.md": b"---\nname: google_maps-automation\ndescription: Maps.\n---\n",
    }, "name"),
    # AgentWorkers/skills: a skill holding other SKILL.md files (its own skills, an old
    # copy): one item, as update finds it (no item's directory is searched further)
    "skills/author/zohoclaw": ({
        "SKILL.md": b"---\nname: zohoclaw\ndescription: Zoho tools.\n---\n# Zoho\n",
        "skills/vibetesting/SKILL.md": b"# Vibe testing\nNo frontmatter here.\n",
        "zohoclaw-1.1.0/SKILL.md": b"---\nname: zohoclaw\ndescription: An old copy.\n---\n",
    }, []),
}


def write_shapes(root: Path) -> None:
    """The SHAPES collection under ``root`` (bytes exact, modes as given)."""
    for item, (files, _) in SHAPES.items():
        for rel, spec in files.items():
            data, mode = spec if isinstance(spec, tuple) else (spec, 0o644)
            target = root / item / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            target.chmod(mode)
