"""One reading of frontmatter: YAML 1.2's core schema, as the hosts of the MCP skills
extension read it; ``check`` names each key YAML 1.1 would read otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.helpers import cli_ok, write

from librarian.formats.yaml12 import ambiguous_keys, load_core

Cap = pytest.CaptureFixture[str]


@pytest.mark.parametrize(("text", "value"), [
    ("yes", "yes"), ("No", "No"), ("on", "on"), ("OFF", "OFF"), ("y", "y"),
    ("2026-01-02", "2026-01-02"), ("2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),
    ("1:30", "1:30"), ("190:20:30", "190:20:30"), ("012", 12), ("0o17", 15), ("0x1F", 31),
    ("1e3", 1000.0), ("1_000", "1_000"), ("true", True), ("False", False), ("~", None),
    ("null", None), ("", None), ("=", "="), ("<<", "<<"), ("-.5", -0.5), (".inf", float("inf")),
])
def test_plain_scalars_resolve_by_the_core_schema(text: str, value: object) -> None:
    assert load_core(f"k: {text}\n", "t") == {"k": value}


@given(st.text(st.characters(codec="utf-8", exclude_categories=(
    "Cs", "Cc", "Cf", "Co", "Cn", "Zl", "Zp")), max_size=40))
def test_a_quoted_string_is_that_string(text: str) -> None:
    quoted = json.dumps(text, ensure_ascii=False)
    assert load_core(f"k: {quoted}\n", "t") == {"k": text}


@given(st.integers(min_value=-(10**30), max_value=10**30))
def test_a_decimal_integer_is_that_integer(number: int) -> None:
    assert load_core(f"k: {number}\n", "t") == {"k": number}


def test_the_keys_read_two_ways_are_named() -> None:
    text = "name: a\nbeta: yes\nwhen: 2026-01-02\nplain: words\nmeta:\n  on: off\n"
    assert ambiguous_keys(text, "t") == ["beta", "when", "meta.on"]


def test_check_warns_naming_the_key(library: Path, sources: Path, capsys: Cap) -> None:
    write(sources / "beta" / "SKILL.md",
          "---\nname: beta\ndescription: yes\nwhen: 2026-01-02\nok: 'yes'\n---\nBody.\n")
    cli_ok(capsys, library, "retain", str(sources / "beta"))
    prompt = json.loads(cli_ok(capsys, library, "prompt", "--format", "json").out)
    assert prompt["skills"][0]["description"] == "yes"
    report = json.loads(cli_ok(capsys, library, "check", "--json").out)
    warned = [w for w in report["warnings"] if "YAML 1.1" in w]
    assert len(warned) == 2
    assert "'description'" in warned[0] and "'when'" in warned[1]
    assert all(w.startswith("skills/beta/SKILL.md: frontmatter ") for w in warned)
