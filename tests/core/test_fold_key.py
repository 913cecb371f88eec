"""fold_key's shortcut for ASCII names gives what the full rule gives."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from librarian.core.gitpaths import HFS_IGNORABLE, fold_key


def _full_rule(name: str) -> str:
    stripped = "".join(ch for ch in name if ord(ch) not in HFS_IGNORABLE)
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", stripped).casefold())


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_names_fold_as_by_the_full_rule(name: str) -> None:
    assert fold_key(name) == _full_rule(name)


@given(st.text())
def test_any_name_folds_as_by_the_full_rule(name: str) -> None:
    assert fold_key(name) == _full_rule(name)


def test_examples() -> None:
    assert fold_key("SKILL.md") == fold_key("skill.MD") == "skill.md"
    assert fold_key("Stra\u00dfe") == fold_key("strasse")
    assert fold_key("e\u0301") == fold_key("\u00e9")
