"""`check` over a source's installed collection judges what update installed: each item
as update found it (the outermost directory librarian.lock names), the files in no item
as stray files (links, git's path rules, secrets), and a manifest directory the lock does
not name as a problem; a local edit of an item is a warning (tests/sources/test_update_merge.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import cli, skill_md
from support.sources_helpers import Upstream, install

Cap = pytest.CaptureFixture[str]
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # assembled: this file holds none
SKILLS = Path("sources/team/skills")


@pytest.fixture
def installed(library: Path, tmp_path: Path, capsys: Cap) -> Path:
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/kit").skill("skills/other")
    up.put("skills/kit/inner/SKILL.md", b"# not an item: one of kit's files\n").commit("one")
    install(capsys, library, up)
    assert cli(capsys, library, "check").code == 0
    return library


def _problems(capsys: Cap, library: Path) -> list[str]:
    result = cli(capsys, library, "check", "--json")
    assert result.code == (2 if result.json["problems"] else 0)
    return list(result.json["problems"])


@pytest.mark.parametrize("where", ["sources/team/SKILL.md", "sources/team/notes.md",
                                   "sources/team/skills/notes.md"])
def test_a_secret_in_no_item_under_sources_is_found(
        installed: Path, capsys: Cap, where: str) -> None:
    (installed / where).write_text(f"token = {TOKEN}\n")
    assert _problems(capsys, installed) == [f"{where}: looks like a secret (GitHub token)"]


def test_a_manifest_above_installed_items_hides_none_of_them(
        installed: Path, capsys: Cap) -> None:
    (installed / SKILLS / "SKILL.md").write_bytes(skill_md("skills"))
    broken = installed / SKILLS / "kit" / "SKILL.md"
    broken.write_text("---\nname: kit\n---\n")  # no description
    problems = _problems(capsys, installed)
    assert f"{SKILLS}/kit/SKILL.md: description: is required" in problems
    assert any(p.startswith(f"{SKILLS}: holds a manifest but librarian.lock names no such "
                            "item of team") for p in problems)
