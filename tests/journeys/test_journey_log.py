"""``log NAME`` follows exactly one item by its path trailers, across a
promotion; ``team:pdf`` is not ``team2:pdf``; an unknown name is exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import cli, make_recipe, make_skill
from support.sources_helpers import Upstream

Capsys = pytest.CaptureFixture[str]


def subjects(capsys: Capsys, library: Path, *args: str) -> list[str]:
    result = cli(capsys, library, "log", *args, "--json")
    assert result.code == 0, result.err
    return [e["subject"] for e in result.json["events"]]


@pytest.fixture
def crowded(library: Path, sources: Path, tmp_path: Path, capsys: Capsys) -> Path:
    """A local pdf (drafted, then promoted), a local word-count recipe, and two sources
    each with their own pdf and word-count."""
    for name in ("team", "team2"):
        up = Upstream(tmp_path / f"{name}.git")
        up.skill("skills/pdf").recipe("recipes/word-count").skill("skills/other").commit()
        assert cli(capsys, library, "source", "add", name, up.url).code == 0
        assert cli(capsys, library, "update", name).code == 0
        up.skill("skills/other", body="Changed.\n").commit()  # touches other, not pdf
        assert cli(capsys, library, "update", name).code == 0
    assert cli(capsys, library, "retain", str(make_skill(sources, "pdf")), "--draft").code == 0
    assert cli(capsys, library, "promote", "pdf").code == 0
    assert cli(capsys, library, "retain", str(make_recipe(sources, "word-count"))).code == 0
    assert cli(capsys, library, "expose", "team:word-count", "--as", "word-count").code == 0
    return library


def test_log_follows_one_item_across_its_promotion(crowded: Path, capsys: Capsys) -> None:
    assert subjects(capsys, crowded, "pdf") == ["promote skill pdf", "retain draft skill pdf"]
    assert subjects(capsys, crowded, "skills/pdf") == subjects(capsys, crowded, "pdf")


def test_log_of_a_managed_item_is_its_source_only(crowded: Path, capsys: Capsys) -> None:
    team = subjects(capsys, crowded, "team:pdf")
    assert len(team) == 1 and team[0].startswith("update team (3 added")
    assert subjects(capsys, crowded, "team:other")[0].startswith("update team (0 added, 1 up")
    assert len(subjects(capsys, crowded, "team:other")) == 2
    assert all("team2" in s for s in subjects(capsys, crowded, "team2:pdf"))


def test_log_of_a_local_recipe_leaves_out_a_tool_of_another(crowded: Path,
                                                            capsys: Capsys) -> None:
    assert subjects(capsys, crowded, "word-count") == ["retain recipe word-count"]
    assert subjects(capsys, crowded, "team:word-count")[0].startswith("expose tool word-count")


def test_log_of_an_unknown_name_is_exit_2(crowded: Path, capsys: Capsys) -> None:
    result = cli(capsys, crowded, "log", "nope")
    assert result.code == 2 and "nope" in result.err
    assert cli(capsys, crowded, "log", "team", "--json").code == 0  # a source


def test_log_limit_must_not_be_negative(crowded: Path, capsys: Capsys) -> None:
    assert len(subjects(capsys, crowded, "-n", "1")) == 1
    for bad in ("-1", "-5"):
        assert cli(capsys, crowded, "log", "-n", bad).code == 2
