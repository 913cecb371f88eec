"""What ``update`` pays that is not its work: the modules it imports, and an update with
nothing new upstream."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from support.helpers import cli, git, modules_after, requires_git, run_main
from support.sources_helpers import Upstream, edit_source

from librarian.agents.claude_manifests import GENERATED

Cap = pytest.CaptureFixture[str]

#: Never imported by an update of unsigned sources that merges nothing and forces nothing.
NOT_NEEDED = ("cryptography", "librarian.trust", "librarian.git.merge",
              "librarian.sources.backups", "librarian.sources.merging",
              "librarian.content.patch", "librarian.core.receipts")


def _code_and_modules(library: Path, *args: str) -> tuple[int, set[str]]:
    code, _, modules = modules_after(library, *args)
    return code, modules


def _loaded(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


@pytest.fixture
def subscribed(tmp_path: Path, library: Path, capsys: Cap) -> tuple[Path, Upstream]:
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/pdf").skill("skills/docx").recipe("recipes/review")
    up.commit("first")
    assert run_main(capsys, "--library", str(library), "source", "add", "team",
                    up.url).code == 0
    return library, up


def test_an_unsigned_update_imports_no_trust_merge_or_json_machinery(
        subscribed: tuple[Path, Upstream]) -> None:
    library, up = subscribed
    for step in ("install", "change", "nothing new"):
        if step == "change":
            up.skill("skills/pdf", body="Do it better.\n").commit("second")
        code, modules = _code_and_modules(library, "update")
        assert code == 0, step
        loaded = [name for name in NOT_NEEDED if _loaded(modules, name)]
        assert loaded == [], f"{step}: {loaded}"
        # the committed configuration is remembered by blob id and a flat SKILL.md
        # frontmatter is read without PyYAML: only the recipe's nested recipe.yaml needs it
        assert _loaded(modules, "yaml") == (step == "install"), step
    # --json needs the JSON conversion (and the receipts), still not the trust machinery
    code, modules = _code_and_modules(library, "update", "--json")
    assert code == 0
    assert _loaded(modules, "librarian.core.jsonable")
    assert not _loaded(modules, "librarian.trust") and not _loaded(modules, "cryptography")


def _memo(library: Path) -> Path:
    return library / ".git" / "librarian" / "cache" / "up-to-date.json"


def _never_read_upstream(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make reading the upstream collection (planning proper) fail loudly."""
    import librarian.sources.plan as plan

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("upstream was read although nothing changed")

    monkeypatch.setattr(plan, "read_collection", refuse)


def test_nothing_new_is_planned_once_then_remembered_and_shown_the_same(
        subscribed: tuple[Path, Upstream], capsys: Cap, monkeypatch: pytest.MonkeyPatch
) -> None:
    library, up = subscribed
    up.put("skills/badfront/SKILL.md", b"---\nname: [oops\n---\n").commit("a bad item")
    assert cli(capsys, library, "update").code == 0
    # an update that changed something remembers the plan of its own commit (sources.delta)
    assert _memo(library).is_file()
    with monkeypatch.context() as patched:
        _never_read_upstream(patched)
        planned = cli(capsys, library, "update", "--json")
    assert planned.code == 0 and planned.json["up_to_date"], planned.err
    assert planned.json["plans"][0]["skipped"], "the bad item is skipped on every update"
    text = cli(capsys, library, "update")
    assert _memo(library).is_file()
    with monkeypatch.context() as patched:
        _never_read_upstream(patched)
        again = cli(capsys, library, "update", "--json")
        assert again.code == 0, again.err
        assert again.json == planned.json
        assert cli(capsys, library, "update").out == text.out
        assert cli(capsys, library, "outdated", "--json").code == 0
    _memo(library).unlink()
    assert cli(capsys, library, "update", "--json").json == planned.json


@requires_git
def test_what_was_remembered_never_hides_a_change(
        subscribed: tuple[Path, Upstream], capsys: Cap, monkeypatch: pytest.MonkeyPatch
) -> None:
    library, up = subscribed
    assert cli(capsys, library, "update").code == 0
    assert cli(capsys, library, "update").code == 0
    assert _memo(library).is_file()
    # the committed configuration changed, the upstream commit did not
    edit_source(library, "team", exclude=("skills/docx",))
    removed = cli(capsys, library, "update", "--json")
    assert removed.code == 0, removed.err
    assert [i["path"] for i in removed.json["plans"][0]["items"]
            if i["action"] == "remove"] == ["skills/docx"]
    assert not (library / "sources" / "team" / "skills" / "docx").exists()
    # an item removed from the collection with plain git is restored
    assert cli(capsys, library, "update").code == 0
    shutil.rmtree(library / "sources" / "team" / "skills" / "pdf")
    git(library, "add", "-A")
    git(library, "commit", "-q", "-m", "removed by hand")
    restored = cli(capsys, library, "update")
    assert restored.code == 0, restored.err
    assert (library / "sources" / "team" / "skills" / "pdf" / "SKILL.md").is_file()
    # a forged lock is refused, remembered plan or not
    assert cli(capsys, library, "update").code == 0
    lock = library / "librarian.lock"
    lock.write_text(re.sub(r"sha256:[0-9a-f]{64}", "sha256:" + "0" * 64, lock.read_text()))
    git(library, "commit", "-q", "-am", "a forged lock")
    refused = cli(capsys, library, "update")
    assert refused.code == 2 and "all zeros" in refused.err


def test_a_damaged_memo_is_only_slower(subscribed: tuple[Path, Upstream], capsys: Cap) -> None:
    library, _ = subscribed
    assert cli(capsys, library, "update").code == 0
    fresh = cli(capsys, library, "update", "--json").json
    learned = json.loads(_memo(library).read_bytes())
    state = learned["entries"]["team"]["state"]
    for entry in ({"state": "x"}, [1], {"state": state, "skipped": "x", "filtered_out": 0},
                  {"state": state, "skipped": [["a", [1]]], "filtered_out": 0},
                  {"state": state, "skipped": [], "filtered_out": "0"}):
        _memo(library).write_text(json.dumps({"version": 1, "entries": {"team": entry}}))
        assert cli(capsys, library, "update", "--json").json == fresh
    _memo(library).write_bytes(b"{not json")
    assert cli(capsys, library, "update", "--json").json == fresh


def test_a_fetched_pack_is_checked_closed_where_it_differs_from_the_previous_tip(
        subscribed: tuple[Path, Upstream], capsys: Cap) -> None:
    """What the previous tip names at the same path is not looked up again, and what a
    changed tree names that neither the pack nor the library holds is still refused."""
    from dulwich.objects import Blob, Commit, Tree

    from librarian.git.transfer import IncompleteSource, _judge
    from librarian.library.layout import Library

    library, _ = subscribed
    assert cli(capsys, library, "update").code == 0
    with Library(library, GENERATED).store() as store:
        objects = store.dulwich_repo.object_store
        old = objects[store.ref(b"refs/librarian/sources/team")]
        assert isinstance(old, Commit)

        def changed_tip(blob: Blob) -> list[Tree | Commit]:
            root = objects[old.tree]
            assert isinstance(root, Tree)
            skills = objects[root[b"skills"][1]].copy()
            pdf = objects[skills[b"pdf"][1]].copy()
            pdf.add(b"SKILL.md", 0o100644, blob.id)
            skills.add(b"pdf", 0o040000, pdf.id)
            root = root.copy()
            root.add(b"skills", 0o040000, skills.id)
            commit = Commit()
            commit.tree, commit.parents = root.id, [old.id]
            commit.author = commit.committer = b"T <t@example.org>"
            commit.commit_time = commit.author_time = 0
            commit.commit_timezone = commit.author_timezone = 0
            commit.message = b"change pdf\n"
            return [pdf, skills, root, commit]

        present = Blob.from_string(b"---\nname: pdf\ndescription: d.\n---\nnew\n")
        objects.add_object(present)
        pack = objects.add_objects([(o, None) for o in changed_tip(present)])
        _judge(store, pack, set(), old.tree)  # docx, review: held, not asked for
        missing = Blob.from_string(b"never sent\n")
        pack = objects.add_objects([(o, None) for o in changed_tip(missing)])
        with pytest.raises(IncompleteSource, match=missing.id.decode()):
            _judge(store, pack, set(), old.tree)
