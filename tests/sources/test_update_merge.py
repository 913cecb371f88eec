"""`update` merges an item edited locally and changed upstream, file by file (spec §6.3):
a clean merge installs upstream in the commit and leaves the merged result in
the work tree as the local edit; a conflict refuses with every file and hunk, changing
nothing; the original edit is backed up before the work tree changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.helpers import (
    GIT,
    assert_one_error_line,
    git,
    git_text,
    head,
    requires_git,
    run_main,
    skill_md,
    trailers,
    tree_snapshot,
)
from support.sources_helpers import MODE_EXEC, MODE_FILE, Upstream

from librarian.agents.claude_manifests import GENERATED
from librarian.formats.config import load_lock
from librarian.git.merge import FileVersion, merge_files

Cap = pytest.CaptureFixture[str]

STEPS = "".join(f"Step {n}: do part {n}.\n" for n in range(1, 11))
ITEM = Path("sources/team/skills/pdf")
MARKERS = ("<<<<<<<", ">>>>>>>")


def lib(capsys: Cap, library: Path, *args: str):  # type: ignore[no-untyped-def]
    return run_main(capsys, "--library", str(library), *args)


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/pdf", body=STEPS).put("skills/pdf/notes.md", b"notes\n")
    up.put("skills/pdf/tool.sh", b"#!/bin/sh\necho one\n", MODE_EXEC)
    up.put("skills/pdf/logo.bin", b"\x89PNG\0\0one\n")
    up.skill("skills/docx").commit("first")
    return up


@pytest.fixture
def installed(library: Path, upstream: Upstream, capsys: Cap) -> Path:
    assert lib(capsys, library, "source", "add", "team", upstream.url).code == 0
    assert lib(capsys, library, "update").code == 0
    return library


def edit(library: Path, name: str, old: str, new: str) -> None:
    path = library / ITEM / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def upstream_skill(up: Upstream, old: str, new: str) -> None:
    text = up.files["skills/pdf/SKILL.md"][0].decode()
    assert old in text
    up.files["skills/pdf/SKILL.md"] = (text.replace(old, new, 1).encode(), MODE_FILE)


def committed(library: Path, name: str) -> bytes:
    return git(library, "show", f"HEAD:{ITEM}/{name}").stdout


def items_of(document: dict) -> dict:  # type: ignore[type-arg]
    return {i["name"]: i for p in document["plans"] for i in p["items"]}


def status_of(capsys: Cap, library: Path) -> dict[str, str]:
    listing = lib(capsys, library, "status", "--json").json["items"]
    return {i["name"]: i["status"] for i in listing}


def no_markers(library: Path) -> None:
    for path in (library / "sources").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not any(m.encode() in data for m in MARKERS), path


# -- clean merges ---------------------------------------------------------------------------


@requires_git
def test_edits_in_different_parts_of_skill_md_merge(
    installed: Path, upstream: Upstream, capsys: Cap
) -> None:
    library = installed
    edit(library, "SKILL.md", "Step 2: do part 2.\n", "Step 2: do part 2, my way.\n")
    upstream_skill(upstream, "Step 9: do part 9.\n", "Step 9: do part 9, revised.\n")
    new_commit = upstream.commit("revise step 9")
    result = lib(capsys, library, "update", "--json")
    assert result.code == 0, result.err
    item = items_of(result.json)["team:pdf"]
    assert item["action"] == "merge" and item["local_edit"]
    assert item["merge"]["clean"] and item["merge"]["combined"] == ["SKILL.md"]
    # the commit and the lock hold upstream's new version ...
    assert committed(library, "SKILL.md") == upstream.files["skills/pdf/SKILL.md"][0]
    locked = load_lock((library / "librarian.lock").read_bytes())["team"]
    assert locked.commit == new_commit and locked.items["skills/pdf"] == item["upstream"]
    assert ("Librarian-Item", str(ITEM)) in trailers(library)
    # ... the work tree holds the merge, as the local edit
    text = (library / ITEM / "SKILL.md").read_text()
    assert "Step 2: do part 2, my way.\n" in text and "Step 9: do part 9, revised.\n" in text
    assert status_of(capsys, library)["team:pdf"] == "modified"
    diff = lib(capsys, library, "diff", "team:pdf").out
    changed = [line for line in diff.splitlines()
               if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    assert changed == ["-Step 2: do part 2.", "+Step 2: do part 2, my way."]
    # git agrees: HEAD is upstream, the edit is an unstaged modification, nothing else
    assert git_text(library, "status", "--porcelain", "--untracked-files=all") == (
        f" M {ITEM}/SKILL.md\n")
    assert "my way" in git_text(library, "diff") and "revised" not in git_text(library, "diff")
    assert git(library, "fsck", "--strict", check=False).returncode == 0
    no_markers(library)


def _check_warns_of_the_edit(capsys: Cap, library: Path, *args: str) -> None:
    result = lib(capsys, library, "check", "--json", *args)
    assert result.code == 0 and result.json["ok"], result.out
    [warning] = [w for w in result.json["warnings"] if w.startswith("librarian.lock:")]
    assert "team pins skills/pdf at sha256:" in warning and "a local edit" in warning


@requires_git
def test_check_passes_a_local_edit_before_and_after_its_merge_and_warns_of_it(
    installed: Path, upstream: Upstream, capsys: Cap
) -> None:
    # A local edit of a managed item is a state update handles, not a broken library
    # (found by a real collection's history: check failed after every clean merge).
    library = installed
    edit(library, "SKILL.md", "Step 2: do part 2.\n", "Step 2: do part 2, my way.\n")
    _check_warns_of_the_edit(capsys, library)
    upstream_skill(upstream, "Step 9: do part 9.\n", "Step 9: do part 9, revised.\n")
    upstream.commit("revise step 9")
    assert lib(capsys, library, "update").code == 0
    _check_warns_of_the_edit(capsys, library)
    git(library, "add", str(ITEM / "SKILL.md"))
    _check_warns_of_the_edit(capsys, library, "--staged")  # the pre-commit hook's view


@requires_git
def test_edits_to_different_files_of_one_item_merge(
    installed: Path, upstream: Upstream, capsys: Cap
) -> None:
    library = installed
    edit(library, "notes.md", "notes\n", "notes\nmy own note\n")
    (library / ITEM / "mine.md").write_text("added locally\n")
    upstream_skill(upstream, "Step 1: do part 1.\n", "Step 1: start here.\n")
    upstream.put("skills/pdf/extra.md", b"added upstream\n").commit("two")
    result = lib(capsys, library, "update", "--json")
    assert result.code == 0, result.err
    assert items_of(result.json)["team:pdf"]["action"] == "merge"
    work = library / ITEM
    assert (work / "notes.md").read_text() == "notes\nmy own note\n"
    assert (work / "mine.md").read_text() == "added locally\n"
    assert (work / "extra.md").read_text() == "added upstream\n"
    assert "Step 1: start here.\n" in (work / "SKILL.md").read_text()
    porcelain = set(git_text(library, "status", "--porcelain",
                             "--untracked-files=all").splitlines())
    assert porcelain == {f" M {ITEM}/notes.md", f"?? {ITEM}/mine.md"}


def test_one_sided_mode_change_and_binary_change_merge(
    installed: Path, upstream: Upstream, capsys: Cap
) -> None:
    library = installed
    edit(library, "tool.sh", "echo one\n", "echo one\necho mine\n")
    upstream.put("skills/pdf/tool.sh", b"#!/bin/sh\necho one\n", MODE_FILE)  # exec bit off
    upstream.put("skills/pdf/logo.bin", b"\x89PNG\0\0two\n").commit("two")
    result = lib(capsys, library, "update", "--json")
    assert result.code == 0, result.err
    tool = library / ITEM / "tool.sh"
    assert tool.read_text() == "#!/bin/sh\necho one\necho mine\n"  # the edit ...
    assert not tool.stat().st_mode & 0o100  # ... and upstream's mode
    assert (library / ITEM / "logo.bin").read_bytes() == b"\x89PNG\0\0two\n"  # taken whole
    if GIT:
        assert git_text(library, "status", "--porcelain") == f" M {ITEM}/tool.sh\n"


# -- conflicts ------------------------------------------------------------------------------


def _assert_refused_unchanged(capsys: Cap, library: Path, *args: str) -> str:
    old_head, snapshot = head(library), tree_snapshot(library)
    lock_bytes = (library / "librarian.lock").read_bytes()
    index = (library / ".git" / "index").read_bytes()
    result = lib(capsys, library, "update", *args)
    assert result.code == 3, result.out + result.err
    line = assert_one_error_line(result.err)
    assert head(library) == old_head and tree_snapshot(library) == snapshot
    assert (library / "librarian.lock").read_bytes() == lock_bytes
    assert (library / ".git" / "index").read_bytes() == index
    assert not (library / ".git" / "refs" / "librarian" / "backups").exists()
    no_markers(library)
    return line


def test_overlapping_edits_conflict_and_nothing_changes(
    installed: Path, upstream: Upstream, capsys: Cap
) -> None:
    library = installed
    edit(library, "SKILL.md", "Step 5: do part 5.\n", "Step 5: my version.\n")
    edit(library, "notes.md", "notes\n", "notes\nmine\n")  # merges, but the item conflicts
    upstream_skill(upstream, "Step 5: do part 5.\n", "Step 5: their version.\n")
    upstream.commit("two")
    line = _assert_refused_unchanged(capsys, library)
    assert ("team:pdf at sources/team/skills/pdf (local edit, changed upstream: SKILL.md: "
            "changed on both sides in overlapping lines (1 hunk(s)): line 9 locally "
            "'Step 5: my version.' vs line 9 upstream 'Step 5: their version.')") in line
    assert "hint: make the listed lines of your edit agree with upstream" in line
    plan = lib(capsys, library, "update", "--dry-run")
    assert plan.code == 0
    assert "conflict  team:pdf" in plan.out
    assert "line 9 locally 'Step 5: my version.' vs line 9 upstream" in plan.out
    document = lib(capsys, library, "update", "--json").json
    (conflict,) = items_of(document)["team:pdf"]["merge"]["conflicts"]
    assert conflict["path"] == "SKILL.md" and conflict["hunks"][0]["ours"] == (
        "Step 5: my version.\n")


@pytest.mark.parametrize("case", ["binary", "removed-upstream", "removed-locally"])
def test_binary_and_removal_conflicts(
    installed: Path, upstream: Upstream, capsys: Cap, case: str
) -> None:
    library = installed
    logo, notes = library / ITEM / "logo.bin", library / ITEM / "notes.md"
    if case == "binary":
        logo.write_bytes(b"\x89PNG\0\0mine\n")
        upstream.put("skills/pdf/logo.bin", b"\x89PNG\0\0theirs\n")
        expected = "logo.bin: binary file changed on both sides"
    elif case == "removed-upstream":
        notes.write_text("notes, edited\n")
        upstream.remove("skills/pdf/notes.md")
        expected = "notes.md: changed locally, removed upstream"
    else:
        notes.unlink()
        upstream.put("skills/pdf/notes.md", b"notes v2\n")
        expected = "notes.md: removed locally, changed upstream"
    upstream.commit("two")
    assert expected in _assert_refused_unchanged(capsys, library)


def test_an_edited_item_removed_upstream_gets_a_hint_without_lines_to_agree(
    installed: Path, upstream: Upstream, capsys: Cap
) -> None:
    library = installed
    edit(library, "notes.md", "notes\n", "notes\nmine\n")
    upstream.remove("skills/pdf").commit("pdf is gone")
    line = _assert_refused_unchanged(capsys, library)
    assert "team:pdf at sources/team/skills/pdf (local edit, removed upstream)" in line
    assert "hint: upstream no longer offers the item (removed, or now invalid): keep your " \
           "edit elsewhere" in line and "listed lines" not in line


def test_force_takes_upstream_for_conflicts_and_still_merges_the_rest(
    installed: Path, upstream: Upstream, capsys: Cap
) -> None:
    library = installed
    edit(library, "SKILL.md", "Step 5: do part 5.\n", "Step 5: my version.\n")
    docx = library / "sources" / "team" / "skills" / "docx" / "SKILL.md"
    docx.write_bytes(docx.read_bytes() + b"my docx note\n")
    upstream_skill(upstream, "Step 5: do part 5.\n", "Step 5: their version.\n")
    upstream.skill("skills/docx", body="Line one.\nLine two.\nLine three.\nDo it.\n")
    upstream.commit("two")
    result = lib(capsys, library, "update", "--force", "--json")
    assert result.code == 0, result.err
    items = items_of(result.json)
    assert items["team:pdf"]["action"] == "update"  # the conflict took upstream's side
    assert items["team:docx"]["action"] == "merge"
    assert "Step 5: their version." in (library / ITEM / "SKILL.md").read_text()
    assert docx.read_text().endswith("Line three.\nDo it.\nmy docx note\n")
    (backup,) = result.json["backups"]
    assert backup["paths"] == ["sources/team/skills/docx", str(ITEM)]


# -- backups, dry runs, a second update -----------------------------------------------------


@requires_git
def test_the_pre_merge_edit_is_backed_up_and_restores(
    installed: Path, upstream: Upstream, capsys: Cap
) -> None:
    library = installed
    edit(library, "SKILL.md", "Step 2: do part 2.\n", "Step 2: mine.\n")
    original = (library / ITEM / "SKILL.md").read_bytes()
    upstream_skill(upstream, "Step 9: do part 9.\n", "Step 9: theirs.\n")
    upstream.commit("two")
    result = lib(capsys, library, "update")
    assert result.code == 0, result.err
    assert "merge     team:pdf" in result.out
    assert "local edits saved in refs/librarian/backups/team/" in result.out
    restore = next(line.strip() for line in result.out.splitlines()
                   if line.strip().startswith("git restore"))
    ref = restore.split("--source=")[1].split()[0]
    assert ("Librarian-Backup", ref) in trailers(library)
    assert git(library, "show", f"{ref}:{ITEM}/SKILL.md").stdout == original
    git(library, *restore.split()[1:])
    assert (library / ITEM / "SKILL.md").read_bytes() == original


def test_dry_run_shows_the_merge_and_diff_shows_its_result(
    installed: Path, upstream: Upstream, capsys: Cap
) -> None:
    library = installed
    edit(library, "SKILL.md", "Step 2: do part 2.\n", "Step 2: mine.\n")
    upstream_skill(upstream, "Step 9: do part 9.\n", "Step 9: theirs.\n")
    upstream.commit("two")
    old_head, snapshot = head(library), tree_snapshot(library)
    plain = lib(capsys, library, "update", "--dry-run")
    assert plain.code == 0, plain.err
    assert "merge     team:pdf" in plain.out and "1 merge" in plain.out
    assert "@@" not in plain.out
    shown = lib(capsys, library, "update", "--dry-run", "--diff")
    assert f"diff --git a/{ITEM}/SKILL.md b/{ITEM}/SKILL.md" in shown.out
    assert "-Step 9: do part 9." in shown.out and "+Step 9: theirs." in shown.out
    assert "Step 2: mine." not in [line.strip(" +-") for line in shown.out.splitlines()
                                   if line.strip().startswith(("+", "-"))]
    assert "merge     team:pdf" in lib(capsys, library, "outdated", "--diff").out
    assert head(library) == old_head and tree_snapshot(library) == snapshot


def test_a_second_update_merges_again(
    installed: Path, upstream: Upstream, capsys: Cap
) -> None:
    library = installed
    edit(library, "SKILL.md", "Step 2: do part 2.\n", "Step 2: mine.\n")
    upstream_skill(upstream, "Step 9: do part 9.\n", "Step 9: theirs.\n")
    upstream.commit("two")
    assert lib(capsys, library, "update").code == 0
    # nothing new upstream: the merged edit is kept as it is, no commit
    again = lib(capsys, library, "update", "--json")
    assert again.code == 0 and again.json["up_to_date"] and again.json["commit"] is None
    assert items_of(again.json)["team:pdf"]["action"] == "keep"
    # upstream moves again: merged over the new base, the edit still there
    upstream_skill(upstream, "Step 6: do part 6.\n", "Step 6: theirs too.\n")
    upstream.commit("three")
    third = lib(capsys, library, "update", "--json")
    assert third.code == 0, third.err
    assert items_of(third.json)["team:pdf"]["action"] == "merge"
    text = (library / ITEM / "SKILL.md").read_text()
    assert all(s in text for s in ("Step 2: mine.", "Step 9: theirs.", "Step 6: theirs too."))
    assert status_of(capsys, library)["team:pdf"] == "modified"
    # upstream takes the very edit: the work tree now equals upstream, the item is clean
    upstream_skill(upstream, "Step 2: do part 2.\n", "Step 2: mine.\n")
    upstream.commit("four")
    fourth = lib(capsys, library, "update", "--json")
    assert items_of(fourth.json)["team:pdf"]["action"] == "update"
    assert status_of(capsys, library)["team:pdf"] == "clean"


def test_an_edit_committed_with_git_is_not_merged_over_the_wrong_base(
    installed: Path, upstream: Upstream, capsys: Cap
) -> None:
    if GIT is None:
        pytest.skip("needs git to commit by hand")
    library = installed
    edit(library, "SKILL.md", "Step 2: do part 2.\n", "Step 2: committed by hand.\n")
    git(library, "commit", "-qam", "hand edit")
    upstream_skill(upstream, "Step 9: do part 9.\n", "Step 9: theirs.\n")
    upstream.commit("two")
    line = _assert_refused_unchanged(capsys, library)
    assert "local edit committed with git" in line


# -- the whole update against the pure merge ------------------------------------------------

_LINES = [f"Line {c}." for c in "abcdefgh"]
_body_edit = st.lists(st.tuples(st.sampled_from(["replace", "insert", "delete"]),
                                st.integers(0, 7), st.sampled_from(["X.", "Y.", "Line a."])),
                      max_size=3)


def _apply(lines: list[str], edits: list[tuple[str, int, str]]) -> list[str]:
    out = list(lines)
    for op, at, text in edits:
        at = min(at, len(out))
        if op == "insert":
            out.insert(at, text)
        elif out:
            out[min(at, len(out) - 1):min(at, len(out) - 1) + 1] = (
                [text] if op == "replace" else [])
    return out


def _item(body: list[str], notes: bytes | None, mode: int) -> dict[str, FileVersion]:
    files = {"SKILL.md": FileVersion(MODE_FILE, skill_md("pdf", body="".join(
        line + "\n" for line in body)))}
    if notes is not None:
        files["notes.md"] = FileVersion(mode, notes)
    return files


_notes = st.sampled_from([None, b"notes\n", b"notes v2\n", b"\0binary\n"])


# each example is a real library and two updates: a dozen of them
@settings(max_examples=12, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ours_edit=_body_edit, theirs_edit=_body_edit, ours_notes=_notes, theirs_notes=_notes,
       ours_mode=st.sampled_from([MODE_FILE, MODE_EXEC]),
       theirs_mode=st.sampled_from([MODE_FILE, MODE_EXEC]))
def test_update_leaves_exactly_the_merge_or_nothing(
    tmp_path_factory: pytest.TempPathFactory, capsys: Cap, ours_edit: list[tuple[str, int, str]],
    theirs_edit: list[tuple[str, int, str]], ours_notes: bytes | None,
    theirs_notes: bytes | None, ours_mode: int, theirs_mode: int,
) -> None:
    """Whatever the two edits: either the commit is upstream and the work tree is exactly
    the pure merge of the three versions, or (a conflict) nothing changed; never a marker."""
    from librarian.ops.create import init_library

    root = tmp_path_factory.mktemp("e2e")
    library = root / "lib"
    init_library(library, "e2e-lib", GENERATED)
    up = Upstream(root / "up.git")
    base = _item(_LINES, b"notes\n", MODE_FILE)
    theirs = _item(_apply(_LINES, theirs_edit), theirs_notes, theirs_mode)
    ours = _item(_apply(_LINES, ours_edit), ours_notes, ours_mode)
    for name, version in base.items():
        up.put(f"skills/pdf/{name}", version.data, version.mode)
    up.commit("base")
    assert lib(capsys, library, "source", "add", "team", up.url).code == 0
    assert lib(capsys, library, "update").code == 0
    work = library / ITEM
    for name in base:
        (work / name).unlink()
    for name, version in ours.items():
        (work / name).write_bytes(version.data)
        (work / name).chmod(0o755 if version.mode == MODE_EXEC else 0o644)
    up.remove("skills/pdf")
    for name, version in theirs.items():
        up.put(f"skills/pdf/{name}", version.data, version.mode)
    up.commit("theirs")
    before_head, before = head(library), tree_snapshot(library)
    result = lib(capsys, library, "update", "--json")
    expected = merge_files(base, ours, theirs)
    if expected.files is None:
        assert result.code == 3, result.out + result.err
        assert head(library) == before_head and tree_snapshot(library) == before
    else:
        assert result.code == 0, result.err
        on_disk = {p.name: FileVersion(MODE_EXEC if p.stat().st_mode & 0o100 else MODE_FILE,
                                       p.read_bytes()) for p in work.iterdir()}
        assert on_disk == dict(expected.files)
        if GIT and theirs != base:
            for name, version in theirs.items():
                assert committed(library, name) == version.data
    no_markers(library)


def test_a_link_in_the_edited_item_is_a_conflict_not_a_merge(
    installed: Path, upstream: Upstream, capsys: Cap
) -> None:
    """A symlink or special file in the work tree is never read or merged."""
    library = installed
    edit(library, "SKILL.md", "Step 2: do part 2.\n", "Step 2: mine.\n")
    (library / ITEM / "elsewhere").symlink_to("/etc/hostname")
    upstream_skill(upstream, "Step 9: do part 9.\n", "Step 9: theirs.\n")
    upstream.commit("two")
    line = _assert_refused_unchanged(capsys, library)
    assert "team:pdf" in line and "no merge" in line


def test_an_item_that_becomes_a_directory_of_another_is_refused_not_a_crash(
    library: Path, tmp_path: Path, capsys: Cap
) -> None:
    # a lost its manifest upstream: a/b is the item now (two changes on nested paths)
    up = Upstream(tmp_path / "nested.git")
    up.skill("skills/a").skill("skills/a/b").commit("a holds b")
    up.skill("skills/a-b").commit("a-b sorts between a and a/b")
    assert lib(capsys, library, "source", "add", "team", up.url).code == 0
    assert lib(capsys, library, "update").code == 0
    up.remove("skills/a/SKILL.md").skill("skills/a-b", body="Changed too.\n")
    up.commit("b on its own")
    line = _assert_refused_unchanged(capsys, library)
    assert "upstream made sources/team/skills/a and sources/team/skills/a/b one inside" in line
    assert "librarian source remove team" in line
