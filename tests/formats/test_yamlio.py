"""The one YAML loader: plain data only, aliases bounded (billion laughs), tags refused."""

from __future__ import annotations

import pytest
import yaml
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


# -- flat documents, read without PyYAML (yamlio._flat_mapping) ---------------------------

_LOADERS = [yaml.SafeLoader, *([yaml.CSafeLoader] if hasattr(yaml, "CSafeLoader") else [])]
_KEYS = st.sampled_from(["name", "description", "license", "allowed-tools", "a_b", "x", "on",
                         "No", "null", "Yes", "oN", "a b", "-x", "k:", "1a", "é"])
_CHARS = st.sampled_from([*"aZ09 :#!&*-,[]{}'\"|>%@`?=<~.\\/\t\r", "é", "—", "\u00a0",
                          "\u2028", "\u0085", "\ufeff", "\U0001f600", "\x7f", "\x01"])
_VALUES = st.one_of(st.sampled_from(["yes", "No", "off", "null", "True", "y", "2024-01-02",
                                     "1e3", ".inf", "0x1f", "a: b", "a #b", "C# rocks", "x:",
                                     "x ", "Reads PDFs.", "~", "<<", "=", "{}", "[]",
                                     "{ }", "[a]", "{}x"]),
                    st.text(_CHARS, max_size=12).map(lambda v: "a" + v))
_LINES = st.one_of(st.tuples(_KEYS, _VALUES).map(lambda kv: f"{kv[0]}: {kv[1]}"),
                   st.sampled_from(["", "  indented: x", "# comment", "---", "key:",
                                    "k:  two spaces", "- item", "metadata: {a: b}"]))


@given(st.lists(_LINES, max_size=6), st.booleans())
def test_a_flat_document_reads_as_pyyaml_reads_it(lines: list[str], final: bool) -> None:
    from librarian.formats.yamlio import _flat_mapping

    text = "\n".join(lines) + ("\n" if final else "")
    flat = _flat_mapping(text)
    if flat is None:
        return  # PyYAML reads it (every other test of this module)
    for loader in _LOADERS:
        assert yaml.load(text, Loader=loader) == flat, loader  # noqa: S506 - safe loaders
    assert all(isinstance(k, str) and v in ({}, []) or isinstance(v, str)
               for k, v in flat.items())


@given(_KEYS, st.text(st.one_of(_CHARS, st.characters()), max_size=15))
def test_a_flat_line_reads_as_pyyaml_reads_it(key: str, value: str) -> None:
    from librarian.formats.yamlio import _flat_mapping

    text = f"{key}: a{value}\n"
    flat = _flat_mapping(text)
    if flat is not None:
        for loader in _LOADERS:
            assert yaml.load(text, Loader=loader) == flat, loader  # noqa: S506 - safe loaders


def test_usual_frontmatter_is_flat_and_anything_else_goes_to_pyyaml() -> None:
    from librarian.formats.yamlio import _flat_mapping

    text = ("name: pdf-tools\ndescription: Extract text and tables from PDFs, fill forms "
            "(use when the user asks about .pdf files)! Café — 100% \"quoted\" words.\n"
            "license: Apache-2.0\n")
    assert _flat_mapping(text) == yaml.safe_load(text)
    assert _flat_mapping("tools: {}\n") == {"tools": {}}  # the template's tools.yaml
    for other in ("name: pdf\nmetadata:\n  author: x\n", "name: yes\n", "name: 'quoted'\n",
                  "name: pdf # a comment\n", "name: a\nname: b\n", "name: pdf\r\n", "\n",
                  "on: x\n", "description: >\n  folded\n", "name: x\n---\n"):
        assert _flat_mapping(other) is None, other
