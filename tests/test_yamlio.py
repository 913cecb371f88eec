"""The one YAML loader: plain data only, aliases bounded (billion laughs), tags refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from librarian.errors import UsageError
from librarian.formats.yamlio import MAX_ALIASES, dump_yaml, load_yaml


def laughs(levels: int, width: int = 9) -> str:
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, levels):
        refs = ", ".join([f"*l{level - 1}"] * width)
        lines.append(f"l{level}: &l{level} [{refs}]")
    return "\n".join(lines) + "\n"


def test_billion_laughs_is_refused() -> None:
    with pytest.raises(UsageError, match="aliases"):
        load_yaml(laughs(9), "bomb.yaml")


def test_a_few_aliases_are_plain_data() -> None:
    doc = load_yaml("base: &b {a: 1}\nfirst: *b\nsecond: *b\n", "ok.yaml")
    assert doc["first"] == doc["second"] == {"a": 1}


def test_the_bound_is_exact() -> None:
    refs = "\n".join(f"k{i}: *a" for i in range(MAX_ALIASES))
    assert len(load_yaml(f"a: &a x\n{refs}\n", "edge.yaml")) == MAX_ALIASES + 1
    with pytest.raises(UsageError, match="aliases"):
        load_yaml(f"a: &a x\n{refs}\nlast: *a\n", "edge.yaml")


@pytest.mark.parametrize("value", ["!!binary aGVsbG8=", "!!set {a, b}", "!!python/name:os.system",
                                   "!custom x", "! x", "!!str 3", "!!timestamp 2024-01-01"])
def test_explicit_tags_are_refused(value: str) -> None:
    with pytest.raises(UsageError, match="tag"):
        load_yaml(f"key: {value}\n", "tagged.yaml")


def test_bangs_and_ampersands_in_text_are_plain() -> None:
    assert load_yaml("a: 'hi!'\nb: R&D\nc: \"&x *y !z\"\n", "t.yaml") == {
        "a": "hi!", "b": "R&D", "c": "&x *y !z"}


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(), inner, max_size=4), max_leaves=20))
def test_dumped_plain_data_loads_back(document: object) -> None:
    assert load_yaml(dump_yaml({"doc": document}), "round.yaml") == {"doc": document}
