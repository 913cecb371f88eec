"""Agent Skills conformance with material shaped like a public skills repository: several
skills with scripts/, references/, binary assets and executable scripts, retained one by
one, listed by `prompt`, promoted from drafts, revised, retired and restored, with the
digest checked independently at every step."""

from __future__ import annotations

import hashlib
import os
import stat
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.collection_helpers import set_policy
from support.helpers import (
    assert_git_consistent,
    cli,
    hand_commit,
    library_state,
    skill_md,
    tree_snapshot,
    write,
)

from librarian.agents.claude_manifests import GENERATED
from librarian.core.model import ItemFile
from librarian.library.layout import Library
from librarian.txn.changes import DirChange

Capsys = pytest.CaptureFixture[str]
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4
TTF = b"\x00\x01\x00\x00\x00\x0f" + bytes(reversed(range(256))) * 8



def frontmatter(name: str, description: str, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n"


def public_collection(root: Path) -> dict[str, str]:
    """A tree shaped like anthropics/skills: skills/<name>/… ; returns name -> description."""
    skills = {
        "pdf": ("Comprehensive PDF manipulation toolkit for extracting text and tables, "
                "creating new PDFs, merging/splitting documents, and handling forms. When "
                "Claude needs to fill in a PDF form or programmatically process PDFs."),
        "docx": ("Document creation, editing, and analysis with support for tracked changes, "
                 "comments, formatting preservation, and text extraction: \"docx\" & <w:t>."),
        "brand-guidelines": "Applies the brand's official colors and typography to artifacts.",
        "mcp-builder": "Guide for creating high-quality MCP (Model Context Protocol) servers.",
    }
    base = root / "skills"
    write(base / "pdf" / "SKILL.md", frontmatter(
        "pdf", skills["pdf"], "license: Proprietary. LICENSE.txt has complete terms\n")
        + "# PDF Processing Guide\n\nSee reference.md and forms.md.\n")
    write(base / "pdf" / "LICENSE.txt", "© Example. All rights reserved.\n")
    write(base / "pdf" / "reference.md", "# Reference\n\n" + "pypdf details.\n" * 40)
    write(base / "pdf" / "forms.md", "# Forms\n\nRun scripts/fill_fillable_fields.py.\n")
    write(base / "pdf" / "scripts" / "fill_fillable_fields.py",
          "#!/usr/bin/env python3\nimport sys\nprint(sys.argv)\n", 0o755)
    write(base / "pdf" / "scripts" / "check_bounding_boxes.py", "def check():\n    pass\n")
    write(base / "docx" / "SKILL.md", frontmatter(
        "docx", f'"{skills["docx"].replace(chr(34), chr(92) + chr(34))}"',
        "license: Proprietary. LICENSE.txt has complete terms\n") + "# DOCX\n")
    write(base / "docx" / "ooxml" / "scripts" / "pack.py", "#!/usr/bin/env python3\n", 0o755)
    write(base / "docx" / "ooxml" / "schemas" / "ISO-IEC29500-4_2016" / "wml.xsd",
          '<?xml version="1.0"?>\n<xsd:schema/>\n')
    write(base / "docx" / "docx-js.md", "# docx-js\n")
    write(base / "brand-guidelines" / "SKILL.md",
          frontmatter("brand-guidelines", skills["brand-guidelines"]) + "# Brand\n")
    write(base / "brand-guidelines" / "assets" / "logo.png", PNG)
    write(base / "brand-guidelines" / "fonts" / "Poppins-Regular.ttf", TTF)
    write(base / "mcp-builder" / "SKILL.md", frontmatter(
        "mcp-builder", skills["mcp-builder"],
        "license: Apache-2.0\ncompatibility: Requires Python 3.10+ and network access\n"
        "metadata:\n  author: example-org\n  version: \"1.0\"\n"
        "allowed-tools: Bash(python:*) Read\nversion: 2\n") + "# MCP\n")
    write(base / "mcp-builder" / "reference" / "evaluation.md", "# Evaluation\n")
    write(base / "mcp-builder" / "scripts" / "requirements.txt", "anthropic\nmcp\n")
    write(base / "mcp-builder" / "scripts" / "connections.py", "#!/usr/bin/env python3\n",
          0o755)
    write(root / "README.md", "# Skills\n")
    return skills


# -- an independent digest (spec §2), not librarian's code -------------------------------


def _tree(directory: Path) -> bytes:
    entries = []
    for entry in os.scandir(directory):
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            entries.append((entry.name.encode() + b"/", b"40000", entry.name.encode(),
                            _tree(Path(entry.path))))
        else:
            data = Path(entry.path).read_bytes()
            mode = b"100755" if st.st_mode & stat.S_IXUSR else b"100644"
            blob = hashlib.sha256(b"blob %d\x00" % len(data) + data).digest()
            entries.append((entry.name.encode(), mode, entry.name.encode(), blob))
    body = b"".join(m + b" " + n + b"\x00" + i for _, m, n, i in sorted(entries))
    return hashlib.sha256(b"tree %d\x00" % len(body) + body).digest()


def digest_of(directory: Path) -> str:
    return "sha256:" + _tree(directory).hex()


def available_skills(text: str) -> dict[str, tuple[str, str]]:
    """name -> (description, location), parsed as XML (so the block is well-formed)."""
    block = text[text.index("<available_skills>"): text.index("</available_skills>") + 19]
    root = ET.fromstring(block)
    out = {}
    for skill in root.findall("skill"):
        def field(tag: str, node: ET.Element = skill) -> str:
            element = node.find(tag)
            assert element is not None and element.text is not None
            return element.text.strip("\n")
        out[field("name")] = (field("description"), field("location"))
    return out


# -- the lifecycle on public-shaped material ------------------------------------------------


def test_public_collection_through_the_whole_lifecycle(
    library: Path, tmp_path: Path, capsys: Capsys
) -> None:
    upstream = tmp_path / "anthropic-skills"
    skills = public_collection(upstream)
    retained: dict[str, str] = {}
    for name in sorted(skills):
        if name == "docx":
            continue  # arrives as a draft below
        source = upstream / "skills" / name
        result = cli(capsys, library, "retain", str(source), "--json")
        assert result.code == 0, result.err
        receipt = result.json
        assert receipt["digest"] == digest_of(source), name
        assert tree_snapshot(library / "skills" / name) == tree_snapshot(source)
        retained[name] = receipt["digest"]
        if name == "mcp-builder":  # unknown key kept, and warned about
            assert any("version" in w for w in receipt["warnings"])
            assert (library / "skills" / name / "SKILL.md").read_bytes() == (
                source / "SKILL.md").read_bytes()

    # Draft -> not listed -> promote -> listed, digest unchanged.
    docx = upstream / "skills" / "docx"
    drafted = cli(capsys, library, "retain", str(docx), "--draft", "--json").json
    assert drafted["digest"] == digest_of(docx)
    listing = available_skills(cli(capsys, library, "prompt").out)
    assert "docx" not in listing
    promoted = cli(capsys, library, "promote", "docx", "--evidence", "reviewed", "--json").json
    assert promoted["digest"] == drafted["digest"] == digest_of(library / "skills" / "docx")
    retained["docx"] = promoted["digest"]

    listing = available_skills(cli(capsys, library, "prompt").out)
    assert sorted(listing) == sorted(skills)
    for name, description in skills.items():
        assert listing[name][0] == description
        location = Path(listing[name][1])
        assert location.is_absolute() and location == library.resolve() / "skills" / name / (
            "SKILL.md")
        assert location.is_file()

    # Revise: a script loses its executable bit and a reference changes.
    revised_source = tmp_path / "pdf-v2"
    import shutil

    shutil.copytree(upstream / "skills" / "pdf", revised_source)
    (revised_source / "scripts" / "fill_fillable_fields.py").chmod(0o644)
    write(revised_source / "reference.md", "# Reference v2\n")
    result = cli(capsys, library, "revise", "pdf", str(revised_source), "--json")
    assert result.code == 0, result.err
    assert result.json["previous_digest"] == retained["pdf"]
    assert result.json["digest"] == digest_of(revised_source) != retained["pdf"]
    assert digest_of(library / "skills" / "pdf") == result.json["digest"]

    # Retire and restore: the digest matches the one retired, bytes and modes too.
    retired = cli(capsys, library, "retire", "brand-guidelines", "--json").json
    assert retired["digest"] == retained["brand-guidelines"]
    assert "brand-guidelines" not in available_skills(cli(capsys, library, "prompt").out)
    restored = cli(capsys, library, "restore", "brand-guidelines", "--json").json
    assert restored["digest"] == retained["brand-guidelines"]
    assert (library / "skills" / "brand-guidelines" / "assets" / "logo.png").read_bytes() == PNG
    assert tree_snapshot(library / "skills" / "brand-guidelines") == tree_snapshot(
        upstream / "skills" / "brand-guidelines")
    assert "brand-guidelines" in available_skills(cli(capsys, library, "prompt").out)

    status = cli(capsys, library, "status", "--json").json
    assert status["clean"] is True
    assert_git_consistent(library)


# -- validation follows the specification --------------------------------------------


def _case(tmp: Path, name: str, data: bytes) -> Path:
    return write(tmp / name / "SKILL.md", data).parent


REFUSED = {  # unusable, or no valid item name: refused whatever the policy
    "uppercase": ("Upper", frontmatter("Upper", "x")),
    "double-hyphen-directory": ("a--b", frontmatter("a--b", "x")),
    "empty-description": ("e", "---\nname: e\ndescription: ''\n---\n"),
    "no-frontmatter": ("f", "# just markdown\n"),
}
NONCONFORMING = {  # admitted with a warning naming the rule; refused under strict
    "leading-hyphen": ("lead", frontmatter("-lead", "x"), ["name-hyphen-ends",
                                                           "name-directory"]),
    "too-long-name": ("n", frontmatter("a" * 65, "x"), ["name-length", "name-directory"]),
    "long-description": ("d", frontmatter("d", "y" * 1025), ["description-length"]),
    "long-compatibility": ("c", frontmatter("c", "x", f"compatibility: {'z' * 501}\n"),
                           ["compatibility-length"]),
    "metadata-not-string": ("m", frontmatter("m", "x", "metadata:\n  version: 1.0\n"),
                            ["metadata-values"]),
    "metadata-not-mapping": ("m", frontmatter("m", "x", "metadata: [a, b]\n"),
                             ["metadata-type"]),
    "allowed-tools-list": ("t", frontmatter("t", "x", "allowed-tools: [Bash, Read]\n"),
                           ["allowed-tools-type"]),
    "extra-keys": ("k", frontmatter("k", "x", "version: 2\ndisable-model-invocation: true\n"),
                   ["unexpected-fields"]),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_unusable_skills_are_refused(
    case: str, library: Path, tmp_path: Path, capsys: Capsys
) -> None:
    dirname, text = REFUSED[case]
    source = _case(tmp_path / "src", dirname, text.encode())
    before = library_state(library)
    result = cli(capsys, library, "retain", str(source))
    assert result.code == 2, (case, result.err)
    assert library_state(library) == before


def rules(warnings: list[str]) -> list[str]:
    return [w.split("[", 1)[1].split("]", 1)[0] for w in warnings]


@pytest.mark.parametrize("case", sorted(NONCONFORMING))
def test_nonconforming_skills_are_admitted_with_the_rule_named(
    case: str, library: Path, tmp_path: Path, capsys: Capsys
) -> None:
    dirname, text, expected = NONCONFORMING[case]
    source = _case(tmp_path / "src", dirname, text.encode())
    result = cli(capsys, library, "retain", str(source), "--json")
    assert result.code == 0, (case, result.err)
    assert result.json["path"] == f"skills/{dirname}"
    assert rules(result.json["warnings"]) == expected
    assert (library / "skills" / dirname / "SKILL.md").read_text() == text
    check = cli(capsys, library, "check", "--json")
    assert check.code == 0 and rules(check.json["warnings"]) == expected
    set_policy(library, conformance="strict")
    assert cli(capsys, library, "check").code == 2
    cli(capsys, library, "retire", dirname)
    before = library_state(library)
    strict = cli(capsys, library, "retain", str(source))
    assert strict.code == 2, strict.out
    assert f"[{expected[0]}]" in strict.err and "conformance: strict" in strict.err
    assert library_state(library) == before


def test_spec_boundaries_are_accepted(library: Path, tmp_path: Path, capsys: Capsys) -> None:
    name = "a" + "-b" * 31 + "c"  # 64 characters
    assert len(name) == 64
    text = frontmatter(name, "y" * 1024, f"compatibility: {'z' * 500}\nmetadata:\n  k: v\n"
                       "allowed-tools: Read Write\nx-custom: kept\n")
    source = _case(tmp_path / "src", name, text.encode())
    result = cli(capsys, library, "retain", str(source), "--json")
    assert result.code == 0, result.err
    assert rules(result.json["warnings"]) == ["unexpected-fields"]
    assert (library / "skills" / name / "SKILL.md").read_text() == text


def test_a_committed_skill_is_named_by_its_directory(library: Path, capsys: Capsys) -> None:
    """Content committed by plain git under another directory is that directory's item."""
    lib = Library(library, GENERATED)
    files = (ItemFile("SKILL.md", False, skill_md("right-name")),)
    hand_commit(lib, "plain git", [],
                [DirChange("drafts/wrong-dir", files),
                                DirChange("skills/other-dir", files)])
    # The draft is named by its directory too: promote, which demands a conforming
    # skill, refuses it for that very difference.
    result = cli(capsys, library, "promote", "wrong-dir", "--json")
    assert result.code == 2, result.err
    assert rules(result.json["problems"]) == ["name-directory"]
    prompt = cli(capsys, library, "prompt")
    assert "right-name" not in prompt.out
    assert "<name>\nother-dir\n</name>" in prompt.out
