"""Properties of what an agent hands the server: paths inside a skill, skill:// URIs, and
the manifests' round trip."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from librarian.agents.skills import clean_path, parse_skill_uri, skill_uri
from librarian.errors import UsageError
from librarian.formats.claude_plugin import (
    VisibleSkill,
    listed_skills,
    marketplace_json,
    plugin_json,
    plugin_skills,
)

SEGMENT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=8)


@given(st.lists(SEGMENT, min_size=1, max_size=5).map("/".join))
def test_a_clean_path_never_leaves_the_item(path: str) -> None:
    try:
        cleaned = clean_path(path)
    except UsageError:
        return
    parts = cleaned.split("/")
    assert not cleaned.startswith("/") and "\\" not in cleaned and "\x00" not in cleaned
    assert all(part not in ("", ".", "..") for part in parts)


@pytest.mark.parametrize("path", ["..", "../x", "a/../../b", "/etc/passwd", "a//b", "./a",
                                  "a\\..\\b", "", "a/", "a/\x00"])
def test_escaping_paths_are_refused(path: str) -> None:
    with pytest.raises(UsageError):
        clean_path(path)


NAMES = st.from_regex(r"[a-z0-9]{1,10}(:[a-z0-9]{1,10})?", fullmatch=True)


@given(NAMES, st.lists(SEGMENT.filter(lambda s: s not in ("", ".", "..") and "/" not in s),
                       min_size=1, max_size=3).map("/".join))
def test_skill_uris_round_trip(name: str, path: str) -> None:
    assert parse_skill_uri(skill_uri(name, path)) == (name, path)


PATHS = st.from_regex(r"(skills|sources/[a-z]{1,5}/skills)/[a-z0-9-]{1,12}", fullmatch=True)


@given(st.lists(PATHS, unique=True, max_size=8))
def test_manifests_round_trip_the_visible_skills(paths: list[str]) -> None:
    skills = [VisibleSkill(p, p.startswith("sources/")) for p in paths]
    assert list(listed_skills(marketplace_json("lib", skills)) or ()) == paths
    assert list(plugin_skills(plugin_json("lib", skills)) or ()) == [
        p for p in paths if p.startswith("sources/")]
    document = json.loads(marketplace_json("lib", skills))
    assert document["plugins"][0]["source"] == "./"
