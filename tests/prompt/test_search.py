"""``librarian search`` and the MCP tool ``search_skills``: every visible skill ranked by
name, description and body (SQLite FTS5, bm25), those a prompt budget cuts included; the
index is kept by item tree id and only changed skills are indexed again."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from support.helpers import cli, cli_ok, make_skill

Cap = pytest.CaptureFixture[str]

#: A collection shaped like the public ones: name -> (description, body).
COLLECTION = {
    "pdf": ("Extract text and tables from PDF files, fill PDF forms, merge and split "
            "documents.", "Use pypdf to read pages; pdfplumber for tables."),
    "docx": ("Create and edit Word documents with tracked changes, comments and "
             "formatting.", "Unpack the .docx, edit document.xml, pack it again."),
    "xlsx": ("Build spreadsheets with formulas, charts and pivot tables; read Excel "
             "workbooks.", "openpyxl keeps formulas; recalculate before saving."),
    "pptx": ("Make slide decks with layouts, speaker notes and images in PowerPoint "
             "presentations.", "python-pptx; one layout per slide type."),
    "canvas-design": ("Design posters and visual art as PNG or PDF using design "
                      "philosophy.", "Compose with grids; restrained palettes."),
    "algorithmic-art": ("Generative art with p5.js, seeded randomness, flow fields and "
                        "particle systems.", "Keep the seed; render at 2x."),
    "mcp-builder": ("Guide to building Model Context Protocol servers that expose tools "
                    "to language models.", "Start from the SDK; validate inputs."),
    "webapp-testing": ("Test local web applications with Playwright, screenshots, "
                       "browser logs, clicking through pages.", "Wait for network idle."),
    "brand-guidelines": ("Apply the company's official brand colors and typography to "
                         "artifacts.", "Primary colour, secondary colour, fonts."),
    "internal-comms": ("Write internal communications such as status reports, newsletters, "
                       "incident updates for leadership.", "Lead with the outcome."),
    "slack-gif-creator": ("Create animated GIFs sized for Slack emoji and messages.",
                          "Keep under 128 KB; 64 frames at most."),
    "theme-factory": ("Style artifacts with ready-made themes, fonts and color palettes "
                      "for slides and documents.", "Ten themes, each a palette."),
    "skill-creator": ("Help author new agent skills with SKILL.md frontmatter, scripts, "
                      "references and evaluation.", "Name, description, progressive "
                      "disclosure."),
    "frontend-design": ("Build distinctive production-grade web interfaces with React and "
                        "CSS, avoiding generic looks.", "Pick a bold aesthetic direction."),
    "doc-coauthoring": ("Co-write long documents with a user through outlining, drafting "
                        "and review rounds.", "Interview first; then draft sections."),
    "git-bisect": ("Find the commit that introduced a regression with git bisect and a "
                   "test script.", "git bisect run ./test.sh"),
    "sql-tuning": ("Speed up slow SQL queries; read query plans, add indexes, rewrite "
                   "joins.", "EXPLAIN ANALYZE first."),
    "kubernetes-debug": ("Diagnose failing Kubernetes pods (crash loops, image pulls, "
                         "resource limits and events).", "kubectl describe pod; logs "
                         "--previous."),
    "terraform-plan": ("Review Terraform plans for destructive changes before applying "
                       "infrastructure.", "Look for forces replacement."),
    "changelog-writer": ("Write release notes and changelogs from merged pull requests.",
                         "Group by feature, fix, breaking change."),
    "regex-helper": ("Compose and explain regular expressions with test cases.",
                     "Anchor patterns; escape metacharacters."),
    "api-docs": ("Document HTTP APIs as OpenAPI specifications with examples.",
                 "One operation per endpoint; schemas for bodies."),
    "security-review": ("Audit code for injection, secrets and unsafe deserialization "
                        "before a release.", "OWASP top ten as a checklist."),
    "data-cleaning": ("Clean CSV datasets, deduplicate rows, fix encodings, normalise "
                      "dates with pandas.", "Keep the raw file; log each step."),
}

#: Queries a person would type, written from the descriptions (not the names).
QUERIES = {
    "fill in a form inside a pdf": "pdf",
    "word document tracked changes": "docx",
    "excel pivot table formulas": "xlsx",
    "speaker notes for a presentation": "pptx",
    "make a poster": "canvas-design",
    "generative particle flow field": "algorithmic-art",
    "build a model context protocol server": "mcp-builder",
    "playwright screenshot of my local web app": "webapp-testing",
    "company colors and typography": "brand-guidelines",
    "incident update newsletter for leadership": "internal-comms",
    "animated gif for slack emoji": "slack-gif-creator",
    "color palette theme for slides": "theme-factory",
    "write a new skill with frontmatter": "skill-creator",
    "react interface that does not look generic": "frontend-design",
    "which commit introduced the regression": "git-bisect",
    "slow query plan indexes": "sql-tuning",
    "pod crash loop": "kubernetes-debug",
    "destructive infrastructure changes before apply": "terraform-plan",
    "release notes from pull requests": "changelog-writer",
    "deduplicate csv rows and fix encodings": "data-cleaning",
}


def collection(library: Path, sources: Path, capsys: Cap) -> None:
    for name, (description, body) in COLLECTION.items():
        cli_ok(capsys, library, "retain", str(make_skill(
            sources, name, body + "\n", description=description)))


def test_search_finds_the_right_skill_in_its_top_three(
    library: Path, sources: Path, capsys: Cap
) -> None:
    collection(library, sources, capsys)
    missed = {}
    for query, expected in QUERIES.items():
        found = json.loads(cli_ok(capsys, library, "search", query, "--limit", "3",
                                  "--json").out)
        names = [hit["name"] for hit in found["hits"]]
        if expected not in names:
            missed[query] = names
    assert not missed, missed
    assert len(QUERIES) == 20


def test_search_covers_what_a_budget_cuts_and_never_a_hidden_skill(
    library: Path, sources: Path, capsys: Cap
) -> None:
    collection(library, sources, capsys)
    cli_ok(capsys, library, "retain", str(make_skill(
        sources, "hidden-trick", description="Undocumented shortcut for zebra stripes.")))
    cli_ok(capsys, library, "hide", "hidden-trick")
    cut = json.loads(cli_ok(capsys, library, "prompt", "--format", "json",
                            "--budget", "600").out)
    dropped = cut["cut"]["dropped_skills"]
    assert "data-cleaning" in dropped
    found = json.loads(cli_ok(capsys, library, "search", "pandas", "--json").out)
    assert found["hits"][0]["name"] == "data-cleaning"  # found in the body
    assert found["indexed"] == len(COLLECTION)
    hidden = json.loads(cli_ok(capsys, library, "search", "zebra stripes", "--json").out)
    assert hidden["hits"] == []
    for bad in (["search", "!!!"], ["search", "pdf", "--limit", "0"],
                ["search", "pdf", "--limit", "51"]):
        refused = cli(capsys, library, *bad)
        assert refused.code == 2, bad
    odd = json.loads(cli_ok(capsys, library, "search", 'pdf" OR name:* NEAR(', "--json").out)
    assert "pdf" in [h["name"] for h in odd["hits"][:3]]  # FTS5 syntax is only words


def test_only_changed_skills_are_indexed_again(
    library: Path, sources: Path, capsys: Cap
) -> None:
    collection(library, sources, capsys)
    cli_ok(capsys, library, "search", "pdf")
    index = library / ".git" / "librarian" / "cache" / "search.sqlite"

    def rows() -> dict[str, int]:
        with sqlite3.connect(index) as db:
            return {key.split(" ", 1)[1]: rowid
                    for rowid, key in db.execute("SELECT rowid, key FROM docs")}

    before = rows()
    cli_ok(capsys, library, "retain", str(make_skill(sources, "zeta", description="Zeta rays.")))
    cli_ok(capsys, library, "retire", "regex-helper")
    found = json.loads(cli_ok(capsys, library, "search", "zeta", "--json").out)
    assert found["hits"][0]["name"] == "zeta"
    after = rows()
    assert set(after) == set(before) - {"regex-helper"} | {"zeta"}
    assert all(after[name] == before[name] for name in after if name != "zeta")
