"""docs/commands.md against the command line: every command and flag the page
names exists, every one that exists is on the page, and every command's JSON document has
exactly the fields the page lists."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from support.helpers import PROJECT
from support.journey_documents import collect

from librarian.cli.main import command_table

PAGE = PROJECT / "docs" / "commands.md"
ALWAYS = {"--json", "--help"}


def _commands() -> tuple[click.Group, dict[str, set[str]]]:
    root = command_table()
    assert isinstance(root, click.Group)

    def walk(command: click.Command, path: list[str]) -> Iterator[tuple[str, set[str]]]:
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                yield from walk(sub, [*path, name])
        else:
            yield " ".join(path), {o for p in command.params if isinstance(p, click.Option)
                                   for o in p.opts if o.startswith("--")} - ALWAYS
    return root, dict(walk(root, []))


def _rows(section_filter: str | None = None) -> Iterator[tuple[str, str, str]]:
    """(section, first cell, whole row) of every table row on the page."""
    section = ""
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line[3:]
        elif line.startswith("| `") and (section_filter is None or section == section_filter):
            cells = re.split(r"(?<!\\)\|", line)
            yield section, cells[1], line


def _documented(known: set[str], groups: set[str]) -> tuple[dict[str, str],
                                                             list[tuple[str, str]]]:
    """(command path -> the text of every row naming it, [(command path, its span)]),
    outside the JSON table."""
    out: dict[str, str] = {}
    spans = []
    for section, first, row in _rows():
        if section in ("JSON documents", "Global options", "Exit codes"):
            continue
        for span in re.findall(r"`([^`]+)`", first):
            words = span.split()
            path = " ".join(words[:2]) if words[0] in groups else words[0]
            assert path in known, f"docs/commands.md names `{span}`: no such command"
            out[path] = out.get(path, "") + row
            spans.append((path, span))
    return out, spans


def test_every_command_and_flag_is_documented_and_exists() -> None:
    root, commands = _commands()
    groups = {name for name, c in root.commands.items() if isinstance(c, click.Group)}
    documented, spans = _documented(set(commands), groups)
    assert set(commands) - set(documented) == set(), "commands missing from the page"
    for path, options in commands.items():
        row = documented[path]
        for option in options:
            assert option in row, f"`{path} {option}` is not in docs/commands.md"
    for path, span in spans:
        for named in re.findall(r"(?<![\w-])--[a-z][a-z-]*", span):
            assert named in commands[path] | ALWAYS, (
                f"docs/commands.md: `{path} {named}` does not exist")
    global_rows = "".join(row for _, _, row in _rows("Global options"))
    for option in {o for p in root.params for o in p.opts}:
        assert option in global_rows, f"the global option {option} is not documented"
    assert "`-h`" in global_rows


def _json_table() -> dict[str, tuple[str, set[str]]]:
    return {command: (kinds, fields) for command, (kinds, fields, _, _) in _specs().items()}


def _specs() -> dict[str, tuple[str, set[str], set[str], dict[str, set[str]]]]:
    """command -> (kinds, fields always there, fields there only sometimes (`(and …)`),
    field -> the fields of each element of that list (`(each: …)`))."""
    out = {}
    for _, first, row in _rows("JSON documents"):
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
        each = {field: set(re.findall(r"`([a-z_]+)`", inner)) for field, inner in
                re.findall(r"`([a-z_]+)` \(each: (.*?)\)", cells[2])}
        optional = {f for inner in re.findall(r"\(and (.*?)\)", cells[2])
                    for f in re.findall(r"`([a-z_]+)`", inner)}
        fields_cell = re.sub(r"\(each:.*?\)|\(and .*?\)", "", cells[2])
        fields = set(re.findall(r"`([a-z_]+)`", fields_cell))
        for command in re.findall(r"`([^`]+)`", first):
            out[command] = (cells[1], fields, optional, each)
    return out


def test_every_json_document_has_the_documented_fields(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    table = _specs()
    _, commands = _commands()
    for path in commands:
        assert path in table, f"docs/commands.md lists no JSON document for `{path}`"
    documents = collect(capsys, tmp_path)
    checked = 0
    for command, document in documents.items():
        key = {"retain --draft": "retain", "defer --until": "defer"}.get(command, command)
        kinds, fields, optional, each = table[key]
        assert fields <= set(document) <= fields | optional, (
            command, sorted(set(document) ^ fields))
        for field, element_fields in each.items():  # one name per field, nested too
            for element in document[field]:
                assert set(element) == element_fields, (
                    command, field, sorted(set(element) ^ element_fields))
        kind_names = {k.strip("`") for k in re.findall(r"`[a-z_*]+`", kinds)}
        assert any(re.fullmatch(k.replace("*", ".*"), document["kind"]) for k in kind_names), (
            command, document["kind"], kind_names)
        checked += 1
    assert checked >= 35
    runs = documents["runs"]["runs"][0]
    assert "recipe" not in runs and isinstance(runs["started"], int)
    assert runs["started_at"].endswith("Z")
    # a moment is Unix seconds with its ISO 8601 twin; a deadline is ISO 8601 UTC
    (draft,) = documents["review"]["drafts"]
    assert isinstance(draft["admitted"], int) and draft["admitted_at"].endswith("Z")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", documents["release"]["expires"])
    assert documents["defer --until"]["until"] == "2099-01-02"
    (unsigned,) = documents["verify"]["sources"]
    assert unsigned["name"] == "team" and unsigned["signed"] is False
    assert unsigned["items"] is None


def test_inspect_name_has_its_own_document(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    table = _json_table()
    assert "inspect NAME" in table and "item" in table["inspect NAME"][0]
