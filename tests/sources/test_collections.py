"""A collection shaped like the public ones (anthropics/skills, openai/skills, plugin
marketplaces, …: nested plugins/<p>/skills/<s>, list-valued allowed-tools, long
descriptions, extra keys, CRLF, binary assets, executables), published with a history of
merges and reverts: `retain`, `source add` + `update` and `check` judge each skill the
same way, install it byte for byte, and warn with the rule it breaks; `conformance:
strict` refuses those; the secret allowlist admits exactly the allowed match. And the
reference validator (skills-ref) is never more lenient than librarian's strict mode, nor
librarian's default stricter than it, on conformance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.collection_helpers import SHAPES, reference_rules, set_policy, write_shapes
from support.helpers import GIT, assert_git_consistent, git, git_text, run_main

from librarian.content.sourcedir import read_source_dir
from librarian.content.validate import validate_item
from librarian.core.model import Policy
from librarian.errors import ValidationError

Cap = pytest.CaptureFixture[str]
pytestmark = pytest.mark.skipif(GIT is None, reason="the git binary is not installed")
INSTALLED = sorted(p for p, (_, expect) in SHAPES.items() if isinstance(expect, list))
NONCONFORMING = sorted(p for p in INSTALLED if SHAPES[p][1])


def lib(capsys: Cap, library: Path, *args: str) -> Any:
    return run_main(capsys, "--library", str(library), *args)


def rules_by_item(warnings: list[str], prefix: str = "") -> dict[str, list[str]]:
    """``<item path>/SKILL.md: nonconforming [rule]: …`` -> item path -> rules."""
    found: dict[str, list[str]] = {}
    for warning in warnings:
        head, sep, rest = warning.partition("/SKILL.md: nonconforming [")
        if sep:
            found.setdefault(head.removeprefix(prefix), []).append(rest.split("]", 1)[0])
    return found


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    """The collection, committed with a history like a maintained repository's: a branch
    merged, a change reverted."""
    root = tmp_path / "upstream"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write_shapes(root)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the collection")
    git(root, "checkout", "-q", "-b", "feature")
    (root / "skills" / "pdf" / "forms.md").write_bytes(b"# Forms\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "pdf: forms")
    git(root, "checkout", "-q", "main")
    (root / "skills" / "pdf" / "LICENSE.txt").write_bytes(b"changed\n")
    git(root, "commit", "-q", "-am", "license change")
    git(root, "revert", "--no-edit", "HEAD")
    git(root, "merge", "-q", "--no-edit", "feature")
    return root


def test_update_installs_every_item_byte_for_byte_with_its_warnings(
    library: Path, upstream: Path, capsys: Cap
) -> None:
    assert lib(capsys, library, "source", "add", "pub", str(upstream)).code == 0
    result = lib(capsys, library, "update", "--json")
    assert result.code == 0, result.err
    assert_git_consistent(library)
    plan = result.json["plans"][0]
    assert sorted(i["path"] for i in plan["items"] if i["action"] == "add") == INSTALLED
    skipped = {s["path"]: s["problems"] for s in plan["skipped"]}
    assert sorted(skipped) == sorted(set(SHAPES) - set(INSTALLED))
    assert "looks like a secret (Google API key)" in " ".join(
        skipped["plugins/scan/skills/firebase-apk-scanner"])
    assert "the item name 'google_maps-automation'" in " ".join(
        skipped["composio-skills/google_maps-automation"])
    assert rules_by_item(result.json["warnings"], "pub: ") == {
        p: SHAPES[p][1] for p in NONCONFORMING}
    for path in INSTALLED:  # same tree id: the same bytes and modes as upstream
        assert git_text(library, "rev-parse", f"HEAD:sources/pub/{path}") == git_text(
            upstream, "rev-parse", f"main:{path}")
    check = lib(capsys, library, "check", "--json")
    assert check.code == 0, check.out
    assert rules_by_item(check.json["warnings"], "sources/pub/") == {
        p: SHAPES[p][1] for p in NONCONFORMING}
    prompt = lib(capsys, library, "prompt", "--format", "json")
    names = {s["name"] for s in prompt.json["skills"]}
    assert {"pub:react-best-practices", "pub:template", "pub:claude-api"} <= names


#: retain names an item by its valid frontmatter name (so these land conforming)
RENAMED = {"template": "template-skill", "skills/react-best-practices":
           "vercel-react-best-practices"}


def test_retain_judges_each_item_as_update_and_check_do(
    library: Path, upstream: Path, capsys: Cap
) -> None:
    expected = {}
    for path, (_, expect) in sorted(SHAPES.items()):
        result = lib(capsys, library, "retain", str(upstream / path), "--json")
        if isinstance(expect, str):
            assert result.code == 2, (path, result.out)
            continue
        assert result.code == 0, (path, result.err)
        name = RENAMED.get(path, path.rsplit("/", 1)[-1])
        rules = [r for r in expect if path not in RENAMED]
        assert result.json["path"] == f"skills/{name}"
        assert rules_by_item([f"{name}/{w}" for w in result.json["warnings"]]).get(
            name, []) == rules
        assert git_text(library, "rev-parse", f"HEAD:skills/{name}") == git_text(
            upstream, "rev-parse", f"main:{path}")
        if rules:
            expected[name] = rules
    check = lib(capsys, library, "check", "--json")
    assert check.code == 0
    assert rules_by_item(check.json["warnings"], "skills/") == expected
    # the same folder retained under its own name is judged exactly as update judges it
    vercel = lib(capsys, library, "retain", str(upstream / "skills" / "react-best-practices"),
                 "--name", "react-best-practices", "--json")
    assert rules_by_item([f"x/{w}" for w in vercel.json["warnings"]]) == {
        "x": ["name-directory"]}


def test_strict_conformance_refuses_the_nonconforming_with_the_rule_named(
    library: Path, upstream: Path, capsys: Cap
) -> None:
    set_policy(library, conformance="strict")
    assert lib(capsys, library, "source", "add", "pub", str(upstream)).code == 0
    result = lib(capsys, library, "update", "--json")
    assert result.code == 0, result.err
    plan = result.json["plans"][0]
    installed = sorted(i["path"] for i in plan["items"] if i["action"] == "add")
    assert installed == sorted(set(INSTALLED) - set(NONCONFORMING))
    skipped = {s["path"]: " ".join(s["problems"]) for s in plan["skipped"]}
    for path in NONCONFORMING:
        for rule in SHAPES[path][1]:
            assert f"[{rule}]" in skipped[path], (path, skipped[path])
    refused = lib(capsys, library, "retain", str(upstream / "skills" / "claude-api"))
    assert refused.code == 2
    assert "[description-length]" in refused.err and "conformance: strict" in refused.err
    assert_git_consistent(library)


def test_the_secret_allowlist_admits_exactly_the_allowed_match(
    library: Path, upstream: Path, capsys: Cap
) -> None:
    scanner = upstream / "plugins" / "scan" / "skills" / "firebase-apk-scanner"
    refused = lib(capsys, library, "retain", str(scanner))
    assert refused.code == 2
    pasted = refused.err.split("policy: {allowed_secrets: [", 1)[1].split("]", 1)[0]
    set_policy(library, allowed_secrets=(pasted,))
    assert lib(capsys, library, "retain", str(scanner)).code == 0
    assert lib(capsys, library, "check").code == 0
    # a second, different key beside the allowed one is still refused
    other = upstream / "elsewhere" / "leaky"
    other.mkdir(parents=True)
    (other / "SKILL.md").write_bytes(b"---\nname: leaky\ndescription: d\n---\n")
    text = (scanner / "references" / "vulnerabilities.md").read_bytes()
    (other / "keys.md").write_bytes(text + b"AIzaSyB9C8D7E6F5G4H3I2J1K0L9M8N7O6P5Q4R\n")
    again = lib(capsys, library, "retain", str(other))
    assert again.code == 2 and "Google API key" in again.err
    assert pasted not in again.err
    # and update installs the allowed item too
    assert lib(capsys, library, "source", "add", "pub", str(upstream)).code == 0
    update = lib(capsys, library, "update", "--json")
    assert update.code == 0, update.err
    added = {i["path"] for i in update.json["plans"][0]["items"] if i["action"] == "add"}
    assert "plugins/scan/skills/firebase-apk-scanner" in added
    assert "elsewhere/leaky" not in added


# -- agreement with the reference validator ---------------------------------------------

#: rules librarian names that skills-ref does not check (it reads these values as text)
LIBRARIAN_ONLY = {"allowed-tools-type", "metadata-values", "metadata-type", "license-type"}


def _librarian(path: Path, policy: Policy) -> tuple[bool, set[str], str]:
    """The judgement of the folder as update and check make it: named by its directory."""
    try:
        content = validate_item(read_source_dir(path, policy), policy,
                                expected_name=path.name)
    except ValidationError as exc:
        return False, set(), " ".join(exc.problems)
    return True, {w.split("[", 1)[1].split("]", 1)[0] for w in content.warnings}, ""


def test_librarian_agrees_with_the_reference_validator(upstream: Path) -> None:
    validator = pytest.importorskip("skills_ref.validator")
    for path in sorted(SHAPES):
        folder = upstream / path
        errors = validator.validate(folder)
        ref_ok, ref_rules = not errors, reference_rules(errors)
        admitted, rules, why = _librarian(folder, Policy())
        strict_ok, _, strict_why = _librarian(folder, Policy(conformance="strict"))
        unsafe = "looks like a secret" in why or "the item name" in why
        # never stricter than the validator on conformance: only unsafe content is refused
        assert admitted or unsafe, (path, why)
        if ref_ok:
            assert admitted or unsafe, (path, why)
            assert rules <= LIBRARIAN_ONLY, (path, rules)
        parsed = not any(r.startswith("frontmatter-") for r in ref_rules)
        if parsed and admitted:  # the same rules, named the same way
            assert rules - LIBRARIAN_ONLY == ref_rules, (path, rules, ref_rules)
        # strict refuses for conformance only what the validator refuses too, or what
        # breaks a rule it does not check
        if not strict_ok and not unsafe:
            assert not ref_ok or rules & LIBRARIAN_ONLY, (path, strict_why)
