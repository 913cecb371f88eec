"""`diff`, `log`, `inspect` and `cat`: the read-only views."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from support.helpers import (
    cli,
    git,
    git_text,
    head,
    library_state,
    make_recipe,
    make_skill,
    requires_git,
    run_main,
    skill_md,
    state_listing,
    tree_snapshot,
    write,
)

from librarian.agents.claude_manifests import GENERATED
from librarian.library.layout import Library
from librarian.ops.retention import retain

LONG_BODY = "".join(f"line {n}\n" for n in range(30))


@pytest.fixture
def stocked(library: Path, sources: Path) -> Path:
    lib = Library(library, GENERATED)
    retain(lib, make_skill(sources, "alpha", body=LONG_BODY,
                           extra_files={"run.sh": (b"#!/bin/sh\necho a\n", 0o755),
                                        "notes.txt": "one\ntwo\n",
                                        "blob.bin": b"\x00\x01\x02"}),
           evidence="worked in three sessions")
    retain(lib, make_recipe(sources, "counter"))
    retain(lib, make_skill(sources, "beta"), draft=True)
    return library



# -- diff ----------------------------------------------------------------------------------


def _comparable(diff_text: str) -> list[str]:
    """Drop git's `index` lines and the function context after a hunk header."""
    out = []
    for line in diff_text.splitlines():
        if line.startswith("index "):
            continue
        out.append(re.sub(r"^(@@ -\S+ \+\S+ @@).*$", r"\1", line))
    return out


def _edit(library: Path) -> None:
    item = library / "skills" / "alpha"
    text = (item / "SKILL.md").read_text()
    text = text.replace("line 12\n", "line twelve\n").replace("line 29\n", "line 29")
    text = text.replace("line 3\n", "")
    (item / "SKILL.md").write_text(text)
    (item / "run.sh").chmod(0o644)  # mode only
    (item / "notes.txt").unlink()  # deleted
    (item / "blob.bin").write_bytes(b"\x00\x09")  # binary


@requires_git
def test_diff_matches_git_diff(stocked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _edit(stocked)
    expected = _comparable(git_text(stocked, "diff", "--no-color", "--no-ext-diff"))
    for args in (["diff"], ["diff", "alpha"], ["diff", "skills/alpha"]):
        result = cli(capsys, stocked, *args)
        assert result.code == 0, result.err
        assert _comparable(result.out) == expected, (args, result.out)
    assert any(line.startswith("@@ ") for line in expected)
    assert "old mode 100755" in expected and "deleted file mode 100644" in expected


@requires_git
def test_diff_of_an_untracked_file_matches_git_intent_to_add(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(stocked / "skills" / "alpha" / "scripts" / "new.sh", "#!/bin/sh\necho new\n", 0o755)
    ours = cli(capsys, stocked, "diff", "alpha").out
    git(stocked, "add", "-N", "skills/alpha/scripts/new.sh")
    assert _comparable(ours) == _comparable(git_text(stocked, "diff", "--no-color"))
    assert "new file mode 100755" in ours and "--- /dev/null" in ours


def test_diff_of_untracked_and_missing_items(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(stocked / "skills" / "gamma" / "SKILL.md", skill_md("gamma"))
    shutil.rmtree(stocked / "drafts" / "beta")
    text = cli(capsys, stocked, "diff").out
    assert "diff --git a/skills/gamma/SKILL.md b/skills/gamma/SKILL.md\nnew file mode 100644\n" \
        "--- /dev/null\n+++ b/skills/gamma/SKILL.md\n" in text
    assert "diff --git a/drafts/beta/SKILL.md b/drafts/beta/SKILL.md\ndeleted file mode " \
        "100644\n--- a/drafts/beta/SKILL.md\n+++ /dev/null\n" in text


def test_diff_of_a_clean_library_is_empty(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in (["diff"], ["diff", "alpha"]):
        result = cli(capsys, stocked, *args)
        assert (result.code, result.out) == (0, "")
    result = cli(capsys, stocked, "diff", "--json")
    assert json.loads(result.out) == {"kind": "diff", "name": None, "diff": ""}


def test_diff_of_a_top_level_file(stocked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = stocked / "tools.yaml"
    path.write_text("tools:\n  x: {recipe: recipes/counter, digest: 'sha256:0'}\n")
    text = cli(capsys, stocked, "diff").out
    assert text.startswith("diff --git a/tools.yaml b/tools.yaml\n")
    assert "-tools: {}\n+tools:\n" in text


def test_diff_of_an_unknown_item_exits_2(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = cli(capsys, stocked, "diff", "nope", "--json")
    assert result.code == 2
    assert json.loads(result.out)["exit_code"] == 2


@requires_git
def test_diff_splits_lines_only_at_newlines_like_git(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = stocked / "skills" / "alpha" / "notes.txt"
    path.write_bytes(b"one\n\x0cpage two\nthree\r four\n")
    git(stocked, "add", "skills/alpha/notes.txt")
    git(stocked, "commit", "-q", "--no-verify", "-m", "plain git edit")
    path.write_bytes(b"one\n\x0cpage two\nthree\r 4\n")
    expected = _comparable(git_text(stocked, "diff", "--no-color"))
    assert _comparable(cli(capsys, stocked, "diff", "alpha").out) == expected


@requires_git
def test_diff_survives_a_symlink_committed_with_plain_git(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (stocked / "drafts" / "beta" / "link").symlink_to("SKILL.md")
    git(stocked, "add", "drafts/beta/link")
    git(stocked, "commit", "-q", "--no-verify", "-m", "plain git symlink")
    (stocked / "skills" / "alpha" / "notes.txt").write_text("one\n2\n")
    result = cli(capsys, stocked, "diff")
    assert result.code == 0, result.err
    assert "+2" in result.out


# -- log -------------------------------------------------------------------------------------


def test_log_is_newest_first_with_trailers(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = cli(capsys, stocked, "log", "--json")
    assert result.code == 0
    document = json.loads(result.out)
    assert document["kind"] == "log"
    events = document["events"]
    assert [e["subject"] for e in events] == [
        "retain draft skill beta", "retain recipe counter", "retain skill alpha",
        "init library test-lib"]
    assert [e["event"] for e in events] == ["retain", "retain", "retain", "init"]
    assert events[0]["commit"] == head(stocked)
    alpha = dict(map(tuple, events[2]["trailers"]))
    assert alpha["Librarian-Item"] == "skills/alpha"
    assert alpha["Librarian-Evidence"] == "worked in three sessions"
    assert alpha["Librarian-Digest"].startswith("sha256:")
    times = [e["time"] for e in events]
    assert times == sorted(times, reverse=True)


def test_log_of_one_item_and_limit(stocked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = json.loads(cli(capsys, stocked, "log", "alpha", "--json").out)["events"]
    assert [e["subject"] for e in events] == ["retain skill alpha"]
    events = json.loads(cli(capsys, stocked, "log", "beta", "--json").out)["events"]
    assert [e["subject"] for e in events] == ["retain draft skill beta"]
    events = json.loads(cli(capsys, stocked, "log", "-n", "2", "--json").out)["events"]
    assert len(events) == 2
    human = cli(capsys, stocked, "log", "alpha").out
    assert "retain skill alpha" in human and "Librarian-Event: retain" in human


@requires_git
def test_log_skips_plain_git_commits(stocked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    git(stocked, "commit", "--allow-empty", "-q", "--no-verify", "-m", "plain commit")
    events = json.loads(cli(capsys, stocked, "log", "--json").out)["events"]
    assert "plain commit" not in [e["subject"] for e in events]
    assert len(events) == 4


# -- inspect ---------------------------------------------------------------------------------


def test_inspect_lists_every_section(stocked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads(cli(capsys, stocked, "inspect", "--json").out)
    assert document["kind"] == "inventory"
    items = {i["path"]: i for i in document["items"]}
    assert set(items) == {"skills/alpha", "recipes/counter", "drafts/beta"}
    assert (items["skills/alpha"]["kind"], items["skills/alpha"]["state"]) == ("skill", "retained")
    assert (items["drafts/beta"]["kind"], items["drafts/beta"]["state"]) == ("skill", "draft")
    assert items["recipes/counter"]["details"] == {"execution": "sync", "environment": "shell"}
    assert items["skills/alpha"]["location"] == str(stocked / "skills" / "alpha")
    assert items["skills/alpha"]["description"] == "Does a thing."
    assert all(i["diagnostics"] == [] for i in items.values())
    for section, expected in (("skills", {"skills/alpha"}), ("recipes", {"recipes/counter"}),
                              ("drafts", {"drafts/beta"}), ("tools", set()),
                              ("sources", set())):
        document = json.loads(cli(capsys, stocked, "inspect", section, "--json").out)
        assert {i["path"] for i in document["items"]} == expected, section


def test_inspect_verbose_shows_files_sizes_last_event(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = json.loads(cli(capsys, stocked, "inspect", "skills", "--verbose", "--json").out)
    (alpha,) = document["items"]
    files = {f["path"]: (f["bytes"], f["executable"]) for f in alpha["files"]}
    skill_size = len((stocked / "skills" / "alpha" / "SKILL.md").read_bytes())
    assert files == {"SKILL.md": (skill_size, False), "run.sh": (17, True),
                     "notes.txt": (8, False), "blob.bin": (3, False)}
    assert alpha["last_event"]["event"] == "retain"
    assert alpha["last_event"]["subject"] == "retain skill alpha"
    assert alpha["digest"].startswith("sha256:")
    human = cli(capsys, stocked, "inspect", "--verbose")
    assert human.code == 0
    assert "run.sh" in human.out and "last event: retain skill alpha" in human.out


def test_inspect_unknown_section_exits_2(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(capsys, stocked, "inspect", "gadgets").code == 2


@requires_git
def test_inspect_shows_diagnostics_for_content_committed_with_plain_git(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(stocked / "skills" / "broken" / "SKILL.md", b"---\nname: broken\n---\nno description\n")
    write(stocked / "skills" / "misnamed" / "SKILL.md", skill_md("other-name"))
    git(stocked, "add", "skills")
    git(stocked, "commit", "-q", "--no-verify", "-m", "plain git")
    document = json.loads(cli(capsys, stocked, "inspect", "--verbose", "--json").out)
    items = {i["path"]: i for i in document["items"]}
    assert any("description" in d for d in items["skills/broken"]["diagnostics"])
    assert items["skills/misnamed"]["diagnostics"] == []
    assert [w.split("]")[0] for w in items["skills/misnamed"]["warnings"]] == [
        "SKILL.md: nonconforming [name-directory"]
    assert items["skills/alpha"]["diagnostics"] == []
    human = cli(capsys, stocked, "inspect", "--verbose")
    assert human.code == 0
    assert "problem:" in human.out and "description" in human.out
    assert "warning: SKILL.md: nonconforming [name-directory]" in human.out
    assert "nonconforming" not in cli(capsys, stocked, "inspect").out


def test_inspect_never_creates_anything(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.rmtree(Library(stocked, GENERATED).state_dir)
    before = library_state(stocked)
    git_dir_before = tree_snapshot(stocked / ".git", skip_git=False)
    for args in (["inspect"], ["inspect", "--verbose", "--json"], ["inspect", "tools"],
                 ["cat", "alpha"], ["log"]):
        assert cli(capsys, stocked, *args).code == 0
    assert library_state(stocked) == before
    assert state_listing(stocked) == []
    assert tree_snapshot(stocked / ".git", skip_git=False) == git_dir_before


@pytest.mark.parametrize("kind", ["empty-dir", "missing", "plain-git", "cwd"])
def test_inspect_outside_a_library_exits_2_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    kind: str,
) -> None:
    target = tmp_path / "target"
    if kind != "missing":
        target.mkdir()
    if kind == "plain-git":
        from dulwich.repo import Repo

        Repo.init(str(target)).close()
    before = tree_snapshot(tmp_path, skip_git=False)
    if kind == "cwd":
        monkeypatch.chdir(target)
        result = run_main(capsys, "inspect", "--json")
    else:
        result = run_main(capsys, "--library", str(target), "inspect", "--json")
    assert result.code == 2
    assert json.loads(result.out)["kind"] == "error"
    assert result.err.startswith("librarian: error: ")
    assert tree_snapshot(tmp_path, skip_git=False) == before


# -- cat ----------------------------------------------------------------------------------------


def test_cat_prints_the_committed_body(stocked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    committed = (stocked / "skills" / "alpha" / "SKILL.md").read_text()
    (stocked / "skills" / "alpha" / "SKILL.md").write_text("local edit\n")
    result = cli(capsys, stocked, "cat", "alpha")
    assert (result.code, result.out) == (0, committed)
    recipe = cli(capsys, stocked, "cat", "counter")
    assert recipe.out == (stocked / "recipes" / "counter" / "recipe.yaml").read_text()
    assert cli(capsys, stocked, "cat", "drafts/beta").out.startswith("---\nname: beta\n")
    document = json.loads(cli(capsys, stocked, "cat", "alpha", "--json").out)
    assert document["body"] == committed and document["path"] == "skills/alpha"
    assert document["digest"].startswith("sha256:") and len(document["commit"]) == 40


def test_cat_unknown_item_exits_2(stocked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = cli(capsys, stocked, "cat", "nope")
    assert result.code == 2
    assert result.out == ""
    assert "nope" in result.err
