"""A key given twice in one mapping of a YAML document librarian reads (``library.yaml``,
``tools.yaml``, a lock in another shape, frontmatter): refused, naming the key, instead of
the last one silently winning — a reviewer must see the policy that applies."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.helpers import assert_one_error_line, cli, git, make_skill

from librarian.errors import UsageError
from librarian.formats.yamlio import load_yaml

TWO_AGENT_BLOCKS = "\nagents:\n  may: [draft]\nagents:\n  may: [draft, retain]\n"


def _commit(library: Path, path: str, text: str) -> None:
    (library / path).write_text(text)
    git(library, "add", path)
    git(library, "commit", "-q", "-m", f"hand edit of {path}")


def test_two_agents_blocks_in_library_yaml_are_refused_naming_the_key(
    capsys: pytest.CaptureFixture[str], library: Path, sources: Path
) -> None:
    _commit(library, "library.yaml", (library / "library.yaml").read_text() + TWO_AGENT_BLOCKS)
    for args in (("prompt",), ("retain", str(make_skill(sources, "notes")))):
        result = cli(capsys, library, *args)
        assert result.code == 2, (args, result.err)
        line = assert_one_error_line(result.err)
        assert "library.yaml" in line and "'agents' twice" in line, line


def test_a_duplicate_tool_in_tools_yaml_is_refused(
    capsys: pytest.CaptureFixture[str], library: Path
) -> None:
    _commit(library, "tools.yaml", "tools:\n  a:\n    recipe: recipes/x\n"
            "  a:\n    recipe: recipes/y\n")
    result = cli(capsys, library, "check")
    assert result.code == 2, result.err
    assert "'a' twice" in result.out + result.err


def test_nested_and_merged_mappings() -> None:
    with pytest.raises(UsageError, match=r"'b' twice \(lines 2 and 3\)"):
        load_yaml("a:\n  b: 1\n  b: 2\n", "x.yaml")
    # A merge key's values are overridden by explicit keys: YAML's rule, not a duplicate.
    assert load_yaml("base: &b {x: 1}\nc:\n  <<: *b\n  x: 2\n", "x.yaml")["c"] == {"x": 2}


@given(st.lists(st.text(alphabet="abcd", min_size=1, max_size=3), min_size=1, max_size=6))
def test_any_repeated_key_is_refused_and_distinct_keys_read(keys: list[str]) -> None:
    text = "".join(f"{key}: [1]\n" for key in keys)
    if len(set(keys)) == len(keys):
        assert set(load_yaml(text, "x.yaml")) == set(keys)
    else:
        with pytest.raises(UsageError, match="twice"):
            load_yaml(text, "x.yaml")
