"""What ``status`` pays that is not its work: the modules a warm
status imports, and the committed configuration documents remembered by blob id
(library/snapshot.py ``committed_yaml``), which never change what a command shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.helpers import (
    cli,
    commit_config_edit,
    hand_commit,
    make_recipe,
    make_skill,
    modules_after,
    write,
)

from librarian.agents.claude_manifests import GENERATED
from librarian.cache.memo import TreeMemo
from librarian.library.layout import Library
from librarian.library.snapshot import DOCUMENTS_MEMO, committed_yaml
from librarian.ops.retention import retain
from librarian.txn.changes import FileChange

Cap = pytest.CaptureFixture[str]

#: Never imported by a warm status of a library without exposed tools (the command
#: modules are: they make the command table).
NOT_NEEDED = ("yaml", "librarian.gate", "librarian.core.manifests", "librarian.content.validate",
              "librarian.formats.skillmd", "librarian.formats.recipe",
              "librarian.content.secretscan", "librarian.txn.transaction", "librarian.sources",
              "librarian.trust", "cryptography", "rich")


def _loaded(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


def _memo(library: Path) -> Path:
    return library / ".git" / "librarian" / "cache" / f"{DOCUMENTS_MEMO}.json"


def test_a_warm_status_imports_only_what_it_uses(library: Path, sources: Path) -> None:
    retain(Library(library, GENERATED), make_skill(sources, "pdf"))
    first = modules_after(library, "status")
    assert first[0] == 0
    assert _memo(library).is_file()  # tools.yaml's document, by its blob id
    code, out, modules = modules_after(library, "status")
    assert (code, out) == first[:2]
    assert [name for name in NOT_NEEDED if _loaded(modules, name)] == []
    # --json needs the JSON conversion, still not PyYAML
    code, out, modules = modules_after(library, "status", "--json")
    assert code == 0 and json.loads(out)["clean"]
    assert _loaded(modules, "librarian.core.jsonable") and not _loaded(modules, "yaml")


def test_a_status_with_tools_judges_them_as_before(library: Path, sources: Path,
                                                   capsys: Cap) -> None:
    retain(Library(library, GENERATED), make_recipe(sources, "review"))
    assert cli(capsys, library, "expose", "review").code == 0
    code, out, modules = modules_after(library, "status", "--json")
    assert code == 0
    assert [(t["name"], t["status"]) for t in json.loads(out)["tools"]] == [("review", "ok")]
    assert _loaded(modules, "librarian.gate.tools")
    again = modules_after(library, "status", "--json")
    assert again[:2] == (code, out) and not _loaded(again[2], "yaml")


def test_a_changed_file_is_validated_again_and_refused_with_the_same_error(
        library: Path, capsys: Cap) -> None:
    assert cli(capsys, library, "status").code == 0
    assert cli(capsys, library, "inspect").code == 0  # library.yaml remembered too
    remembered = json.loads(_memo(library).read_bytes())["entries"]
    assert len(remembered) == 2
    hand_commit(Library(library, GENERATED), "a bad tools.yaml", [],
                [FileChange("tools.yaml", b"tools:\n  x: {recipe: recipes/x}\n")])
    refused = cli(capsys, library, "status")
    assert refused.code == 2 and "recipe and digest are required" in refused.err
    _memo(library).unlink()
    assert cli(capsys, library, "status") == refused  # the same without any memo
    assert not _memo(library).exists()  # a failed command remembers nothing
    hand_commit(Library(library, GENERATED), "tools.yaml again", [],
                [FileChange("tools.yaml", b"tools: {}\n")])
    assert cli(capsys, library, "status").code == 0
    # library.yaml: a new blob is read and validated as ever
    commit_config_edit(library, "max_item_files: 2000", "max_item_files: 0")
    bad = cli(capsys, library, "inspect")
    assert bad.code == 2 and "max_item_files must be a whole number" in bad.err


def test_a_damaged_or_forged_memo_is_only_slower(library: Path, capsys: Cap) -> None:
    fresh = cli(capsys, library, "status", "--json")
    inventory = cli(capsys, library, "inspect", "--json")
    entries = json.loads(_memo(library).read_bytes())["entries"]
    for damage in ({key: {"document": {"tools": 3, "extra": 1}} for key in entries},
                   {key: {"document": None} for key in entries},
                   {key: [1, 2] for key in entries}, {key: "x" for key in entries}):
        write(_memo(library), json.dumps({"version": 1, "entries": damage}))
        assert cli(capsys, library, "status", "--json") == fresh
        assert cli(capsys, library, "inspect", "--json") == inventory
    write(_memo(library), b"{not json")
    assert cli(capsys, library, "status", "--json") == fresh


def test_a_document_json_cannot_hold_exactly_is_never_remembered(library: Path) -> None:
    """YAML has values JSON has not (a date, a number as a key, NaN): such a document is
    parsed on every read, never approximated (no configuration file accepts one today;
    ``committed_yaml`` does not rely on that)."""
    seen: list[object] = []

    def accept(document: object, where: str) -> object:
        seen.append(document)
        return document

    with Library(library, GENERATED).store() as store:
        for text, remembered in ((b"when: 2024-01-02\n", False), (b"1: one\n", False),
                                 (b"x: .nan\n", False), (b"x: [1, 2.5, null, yes]\n", True)):
            blob = store.blob(text)
            store.flush(blob)
            first = committed_yaml(store, blob, "x.yaml", accept)
            memo = TreeMemo.of(store, DOCUMENTS_MEMO)
            assert (memo.get(blob.decode()) is not None) == remembered, text
            assert committed_yaml(store, blob, "x.yaml", accept) == first or not remembered
    assert seen[-1] == {"x": [1, 2.5, None, True]}


def test_the_memo_never_goes_through_a_link(library: Path, tmp_path: Path,
                                            capsys: Cap) -> None:
    """A linked memo file is refused like any linked state; a linked cache directory is
    neither read nor written through (tests/ops/test_status.py: the stamp)."""
    fresh = cli(capsys, library, "status", "--json")
    outside = tmp_path / "outside"
    outside.mkdir()
    forged = json.dumps({"version": 1, "entries": {}})
    write(outside / f"{DOCUMENTS_MEMO}.json", forged)
    _memo(library).unlink()
    _memo(library).symlink_to(outside / f"{DOCUMENTS_MEMO}.json")
    refused = cli(capsys, library, "status")
    assert refused.code == 2 and "never writes through" in refused.err  # as for any cache
    assert (outside / f"{DOCUMENTS_MEMO}.json").read_text() == forged  # not written through
    _memo(library).unlink()
    assert cli(capsys, library, "status", "--json") == fresh
