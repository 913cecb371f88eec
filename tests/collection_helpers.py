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

    path = library / "library.yaml"
    config = load_library_config(path.read_bytes())
    path.write_bytes(dump_library_config(replace(config, policy=replace(config.policy,
                                                                        **fields))))
    with Repo(str(library)) as repo:
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
