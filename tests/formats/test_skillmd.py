from __future__ import annotations

import json
import string

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from librarian.core.manifests import SkillManifest
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
        (b"---\n---\n", "description: is required"),
        # YAML 1.2 (what hosts read): a date-like word is a string, not a bad date.
        (b"---\nname: 2024-13-45\n---\n", "description: is required"),
    ],
)
def test_structural_problems(data: bytes, expected: str) -> None:
    assert problems_of(data)[0].startswith(expected)


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        ("name: a\n", "description: is required"),
        ("name: a\ndescription: '   '\n", "description: must not be blank"),
        ("name: a\ndescription: true\n", "description: must be a string, got boolean"),
    ],
)
def test_a_skill_without_a_description_is_unusable(frontmatter: str, expected: str) -> None:
    assert any(problem.startswith(expected) for problem in problems_of(skill(frontmatter)))


def rules_of(frontmatter: str) -> list[str]:
    return [f.rule for f in parse_skill_md(skill(frontmatter), "S").nonconforming]


@pytest.mark.parametrize(
    ("frontmatter", "rules"),
    [
        ("description: d\n", ["name-required"]),
        ("name: 12\ndescription: d\n", ["name-empty"]),
        ("name: My-Skill\ndescription: d\n", ["name-lowercase"]),
        ("name: My Skill\ndescription: d\n", ["name-lowercase", "name-characters"]),
        ("name: a--b\ndescription: d\n", ["name-consecutive-hyphens"]),
        ("name: -ab\ndescription: d\n", ["name-hyphen-ends"]),
        ("name: a_b\ndescription: d\n", ["name-characters"]),
        (f"name: {'a' * 65}\ndescription: d\n", ["name-length"]),
        ("name: a\ndescription: d\nlicense: 3\n", ["license-type"]),
        ("name: a\ndescription: d\nallowed-tools: [Read, Grep]\n", ["allowed-tools-type"]),
        ("name: a\ndescription: d\nallowed-tools: {a: 1}\n", ["allowed-tools-type"]),
        ("name: a\ndescription: d\ncompatibility: 3\n", ["compatibility-type"]),
        ("name: a\ndescription: d\nmetadata: [x]\n", ["metadata-type"]),
        ("name: a\ndescription: d\nmetadata: {v: 1.0}\n", ["metadata-values"]),
        ("name: a\ndescription: d\nmetadata: {1: x}\n", ["metadata-values"]),
        ("name: a\ndescription: d\n1: x\nversion: 2\n", ["unexpected-fields"]),
    ],
)
def test_nonconformities_name_their_rule_and_are_read_tolerantly(
    frontmatter: str, rules: list[str]
) -> None:
    assert rules_of(frontmatter) == rules


def test_tolerant_readings() -> None:
    manifest = parse_skill_md(skill("name: a\ndescription: d\nallowed-tools: [Read, Grep]\n"
                                    "metadata: {v: 1.0, tags: [x]}\n"), "S")
    assert manifest.allowed_tools == "Read Grep"
    assert manifest.metadata == (("v", "1.0"), ("tags", "['x']"))


def test_lengths() -> None:
    ok = skill(f"name: a\ndescription: {'d' * 1024}\ncompatibility: {'c' * 500}\n")
    assert parse_skill_md(ok, "SKILL.md").nonconforming == ()
    manifest = parse_skill_md(
        skill(f"name: a\ndescription: {'d' * 1500}\ncompatibility: {'c' * 501}\n"), "S")
    assert [(f.rule, f.message) for f in manifest.nonconforming] == [
        ("description-length", "description is 1500 characters (the limit is 1024)"),
        ("compatibility-length", "compatibility is 501 characters (the limit is 500)"),
    ]
    assert manifest.description == "d" * 1500


def test_single_problem_has_no_count() -> None:
    with pytest.raises(ValidationError) as info:
        parse_skill_md(skill("name: a\n"), "S")
    assert info.value.message == "S: invalid SKILL.md: description: is required"


# --- properties ---------------------------------------------------------------------------

name_chars = st.text(alphabet=string.ascii_lowercase + string.digits + "-_A", max_size=70)


@FAST
@given(name_chars)
def test_name_rule_matches_names_module(name: str) -> None:
    """A name valid for librarian conforms; one that is not breaks a named rule (or is
    empty), and is kept as written."""
    manifest = parse_skill_md(skill(f"name: {json.dumps(name)}\ndescription: d\n"), "S")
    assert manifest.name == name
    if name_problem(name) is None:
        assert manifest.nonconforming == ()
    else:
        assert {f.rule for f in manifest.nonconforming} <= {
            "name-empty", "name-length", "name-lowercase", "name-hyphen-ends",
            "name-consecutive-hyphens", "name-characters"}
        assert manifest.nonconforming


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


def test_frontmatter_is_read_as_yaml_1_2_reads_it() -> None:
    """`yes`, dates and sexagesimal numbers are strings for agents' hosts: so here too."""
    manifest = parse_skill_md(skill("name: a\ndescription: yes\n"), "S")
    assert manifest.description == "yes"
    assert parse_skill_md(skill("name: a\ndescription: 1:30\n"), "S").description == "1:30"
