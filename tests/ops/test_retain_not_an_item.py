"""What ``retain`` says first about a folder that is no item (neither SKILL.md nor
recipe.yaml): that, before any secret it may hold; and a secret refusal's pasteable
policy line says library.yaml must then be committed."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import assert_one_error_line, cli, head, make_skill, write

AWS_LINE = "aws_secret_access_key = Zk3pQ9vX2mR7tL1nB8cD4fG6hJ0kW5sY3uE7iO2a\n"


def test_a_plugin_folder_is_said_to_be_no_item_before_its_secrets(
    capsys: pytest.CaptureFixture[str], library: Path, tmp_path: Path
) -> None:
    plugin = tmp_path / "plugin"
    write(plugin / ".claude-plugin" / "plugin.json", '{"name": "p"}\n')
    make_skill(plugin / "skills", "helper")
    write(plugin / "config.ini", AWS_LINE)
    before = head(library)
    result = cli(capsys, library, "retain", str(plugin), "--json")
    assert result.code == 2
    line = assert_one_error_line(result.err)
    assert "neither a skill nor a recipe" in line and "secret" not in line
    assert f"librarian retain {plugin}/skills/*" in line
    assert result.json["path"] == str(plugin) and head(library) == before


def test_an_empty_folder_is_no_item(capsys: pytest.CaptureFixture[str], library: Path,
                                    tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = cli(capsys, library, "retain", str(tmp_path / "empty"))
    assert result.code == 2
    assert "no SKILL.md and no recipe.yaml" in assert_one_error_line(result.err)


def test_the_allowed_secrets_line_says_to_commit_library_yaml(
    capsys: pytest.CaptureFixture[str], library: Path, sources: Path
) -> None:
    skill = make_skill(sources, "keys", extra_files={"notes.ini": AWS_LINE})
    result = cli(capsys, library, "retain", str(skill))
    assert result.code == 2
    line = assert_one_error_line(result.err)
    assert "policy: {allowed_secrets: [sha256:" in line
    assert "commit library.yaml" in line
