from __future__ import annotations

import json
import string

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from librarian.core.model import SkillManifest
from librarian.core.names import name_problem
from librarian.errors import LibrarianError, ValidationError
from librarian.formats.skillmd import parse_skill_md

FAST = settings(max_examples=60, deadline=None, database=None)


def skill(frontmatter: str, body: str = "# Body\n") -> bytes:
    return f"---\n{frontmatter}---\n{body}".encode()


def problems_of(data: bytes) -> tuple[str, ...]:
    with pytest.raises(ValidationError) as info:
        parse_skill_md(data, "skills/x/SKILL.md")
    return info.value.problems


def test_minimal_skill() -> None:
    manifest = parse_skill_md(skill("name: pdf\ndescription: Work with PDFs.\n"), "SKILL.md")
    assert manifest == SkillManifest(name="pdf", description="Work with PDFs.", body="# Body\n")


def test_all_fields() -> None:
    data = skill(
        "name: my-skill\n"
        "description: Does things.\n"
        "license: MIT\n"
        "compatibility: Needs Python 3.10\n"
        "metadata: {author: me, version: '1.0'}\n"
        "allowed-tools: Bash(git:*) Read\n"
    )
    manifest = parse_skill_md(data, "SKILL.md")
    assert manifest.license == "MIT"
    assert manifest.compatibility == "Needs Python 3.10"
    assert manifest.metadata == (("author", "me"), ("version", "1.0"))
    assert manifest.allowed_tools == "Bash(git:*) Read"
    assert manifest.unknown_keys == ()


def test_crlf_and_bom_are_accepted() -> None:
    text = "---\r\nname: pdf\r\ndescription: Work with PDFs.\r\n---\r\nBody\r\n"
    for data in (text.encode(), b"\xef\xbb\xbf" + text.encode()):
        manifest = parse_skill_md(data, "SKILL.md")
        assert (manifest.name, manifest.description) == ("pdf", "Work with PDFs.")
        assert manifest.body == "Body\r\n"


def test_body_may_hold_fences_and_frontmatter_may_end_the_file() -> None:
    manifest = parse_skill_md(skill("name: a\ndescription: d\n", "x\n---\ny\n"), "SKILL.md")
    assert manifest.body == "x\n---\ny\n"
    assert parse_skill_md(b"---\nname: a\ndescription: d\n---", "S").body == ""


def test_unknown_keys_are_kept_and_reported_sorted() -> None:
    data = skill("name: a\ndescription: d\nzeta: 1\nalpha: [x]\n")
    assert parse_skill_md(data, "SKILL.md").unknown_keys == ("alpha", "zeta")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"name: a\n", "frontmatter: SKILL.md must start with a '---' line"),
        (b"---\nname: a\ndescription: d\n", "frontmatter: the opening '---' line has no closing"),
        (b"---\nname: [a\n---\n", "frontmatter is not valid YAML"),
        (b"---\n- a\n- b\n---\n", "frontmatter: must be a mapping, got list"),
        (b"---\nname: a\ndescription: \xff\n---\n", "SKILL.md is not valid UTF-8"),
        (b"---\n---\n", "name: is required"),
        (b"---\nname: 2024-13-45\n---\n", "frontmatter is not valid YAML"),
    ],
)
def test_structural_problems(data: bytes, expected: str) -> None:
    assert problems_of(data)[0].startswith(expected)


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        ("description: d\n", "name: is required"),
        ("name: 12\ndescription: d\n", "name: must be a string, got integer"),
        ("name: My-Skill\ndescription: d\n", "name: 'My-Skill' may only hold a-z, 0-9 and '-'"),
        ("name: a--b\ndescription: d\n", "name: 'a--b' holds '--'"),
        ("name: -ab\ndescription: d\n", "name: '-ab' starts or ends with '-'"),
        ("name: a\n", "description: is required"),
        ("name: a\ndescription: '   '\n", "description: must not be blank"),
        ("name: a\ndescription: yes\n", "description: must be a string, got boolean"),
        ("name: a\ndescription: d\nlicense: 3\n", "license: must be a string, got integer"),
        ("name: a\ndescription: d\nallowed-tools: [Read]\n", "allowed-tools: must be a string"),
        ("name: a\ndescription: d\nmetadata: [x]\n", "metadata: must be a mapping of strings"),
        ("name: a\ndescription: d\nmetadata: {v: 1.0}\n", "metadata.v: must be a string, got"),
        ("name: a\ndescription: d\nmetadata: {1: x}\n", "metadata: key 1 must be a string"),
        ("name: a\ndescription: d\n1: x\n", "frontmatter: key 1 is not a string"),
    ],
)
def test_field_problems(frontmatter: str, expected: str) -> None:
    assert any(problem.startswith(expected) for problem in problems_of(skill(frontmatter)))


def test_lengths() -> None:
    ok = skill(f"name: a\ndescription: {'d' * 1024}\ncompatibility: {'c' * 500}\n")
    parse_skill_md(ok, "SKILL.md")
    problems = problems_of(
        skill(f"name: a\ndescription: {'d' * 1500}\ncompatibility: {'c' * 501}\n")
    )
    assert problems == (
        "description: must be 1-1024 characters, got 1500",
        "compatibility: must be at most 500 characters, got 501",
    )


def test_every_problem_is_collected_into_a_one_line_message() -> None:
    data = skill("name: Bad_Name\ndescription: ''\nlicense: 1\nmetadata: {a: 2}\n")
    with pytest.raises(ValidationError) as info:
        parse_skill_md(data, "skills/x/SKILL.md")
    error = info.value
    assert len(error.problems) == 4
    assert error.path == "skills/x/SKILL.md"
    assert error.message == (
        f"skills/x/SKILL.md: invalid SKILL.md: {error.problems[0]} (and 3 more)"
    )
    assert "\n" not in error.message
    assert error.exit_code == 2


def test_single_problem_has_no_count() -> None:
    with pytest.raises(ValidationError) as info:
        parse_skill_md(skill("name: a\n"), "S")
    assert info.value.message == "S: invalid SKILL.md: description: is required"


# --- properties ---------------------------------------------------------------------------

name_chars = st.text(alphabet=string.ascii_lowercase + string.digits + "-_A", max_size=70)


@FAST
@given(name_chars)
def test_name_rule_matches_names_module(name: str) -> None:
    data = skill(f"name: {json.dumps(name)}\ndescription: d\n")
    if name_problem(name) is None:
        assert parse_skill_md(data, "S").name == name
    else:
        assert any(p.startswith("name:") for p in problems_of(data))


valid_names = st.from_regex(r"[a-z0-9]([a-z0-9]|-(?=[a-z0-9])){0,20}", fullmatch=True)
texts = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=80)


@FAST
@given(
    name=valid_names,
    description=texts.filter(lambda t: t.strip() != ""),
    license_=st.none() | texts,
    metadata=st.dictionaries(texts, texts, max_size=3),
    extra=st.dictionaries(st.sampled_from(["x-a", "tags", "version"]), texts, max_size=2),
)
def test_frontmatter_round_trips(
    name: str,
    description: str,
    license_: str | None,
    metadata: dict[str, str],
    extra: dict[str, str],
) -> None:
    document: dict[str, object] = {"name": name, "description": description, **extra}
    if license_ is not None:
        document["license"] = license_
    if metadata:
        document["metadata"] = metadata
    frontmatter = yaml.safe_dump(document, allow_unicode=True)
    manifest = parse_skill_md(skill(frontmatter, "body"), "S")
    assert manifest.name == name
    assert manifest.description == description
    assert manifest.license == license_
    assert dict(manifest.metadata) == metadata
    assert manifest.unknown_keys == tuple(sorted(extra))
    assert manifest.body == "body"


@settings(max_examples=150, deadline=None, database=None)
@given(st.binary(max_size=300) | st.text(max_size=300).map(lambda t: ("---\n" + t).encode()))
def test_arbitrary_bytes_raise_only_librarian_errors(data: bytes) -> None:
    try:
        parse_skill_md(data, "S")
    except LibrarianError:
        pass
