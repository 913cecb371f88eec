"""`librarian status`: clean / modified / missing / untracked, the stat cache, racy files."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from support.helpers import (
    assert_git_consistent,
    git_text,
    hand_commit,
    make_skill,
    requires_git,
    run_main,
    settle_files,
    skill_md,
    tree_snapshot,
    write,
)

from librarian.agents.claude_manifests import GENERATED
from librarian.cache import statcache
from librarian.cache.statfile import ItemsFile, identity_of
from librarian.library.layout import Library
from librarian.ops.retention import retain
from librarian.ops.status import library_status


@pytest.fixture
def stocked(library: Path, sources: Path) -> Path:
    """A library holding skill ``alpha`` (with a script) and draft ``beta``."""
    lib = Library(library, GENERATED)
    retain(lib, make_skill(sources, "alpha", extra_files={"run.sh": (b"#!/bin/sh\n", 0o755),
                                                          "notes/a.md": "aaaa\n"}))
    retain(lib, make_skill(sources, "beta"), draft=True)
    return library


def status_json(capsys: pytest.CaptureFixture[str], library: Path, *extra: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = run_main(capsys, "--library", str(library), "status", "--json", *extra)
    return result.code, json.loads(result.out)


def states(document: dict) -> dict[str, str]:  # type: ignore[type-arg]
    return {item["path"]: item["status"] for item in document["items"]}


def test_clean_library(stocked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, document = status_json(capsys, stocked, "--check")
    assert code == 0
    assert document["kind"] == "status" and document["clean"] is True
    assert states(document) == {"skills/alpha": "clean", "drafts/beta": "clean"}
    by_path = {item["path"]: item for item in document["items"]}
    assert by_path["drafts/beta"]["state"] == "draft"
    assert by_path["skills/alpha"]["digest"] == by_path["skills/alpha"]["committed"]
    assert {f["path"]: f["status"] for f in document["files"]} == {
        "library.yaml": "clean", "tools.yaml": "clean", "librarian.lock": "clean",
        ".gitattributes": "clean", "README.md": "clean", ".claude-plugin": "clean"}
    result = run_main(capsys, "--library", str(stocked), "status")
    assert result.code == 0 and result.out.startswith("clean")
    assert_git_consistent(stocked)  # librarian and git agree


def test_modified_item(stocked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (stocked / "skills" / "alpha" / "notes" / "a.md").write_text("changed\n")
    code, document = status_json(capsys, stocked)
    assert code == 0
    assert document["clean"] is False
    assert states(document)["skills/alpha"] == "modified"
    alpha = next(i for i in document["items"] if i["path"] == "skills/alpha")
    assert alpha["digest"] != alpha["committed"] and alpha["committed"].startswith("sha256:")
    result = run_main(capsys, "--library", str(stocked), "status", "--check")
    assert result.code == 3
    assert "modified" in result.out and "skills/alpha" in result.out


def test_added_and_removed_files_are_modifications(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(stocked / "drafts" / "beta" / "extra.md", "more\n")
    (stocked / "skills" / "alpha" / "notes" / "a.md").unlink()
    code, document = status_json(capsys, stocked, "--check")
    assert code == 3
    assert states(document) == {"skills/alpha": "modified", "drafts/beta": "modified"}


def test_missing_item(stocked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.rmtree(stocked / "skills" / "alpha")
    code, document = status_json(capsys, stocked, "--check")
    assert code == 3
    assert states(document)["skills/alpha"] == "missing"
    alpha = next(i for i in document["items"] if i["path"] == "skills/alpha")
    assert alpha["digest"] is None and alpha["committed"].startswith("sha256:")


def test_untracked_items(stocked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(stocked / "skills" / "gamma" / "SKILL.md", skill_md("gamma"))
    write(stocked / "drafts" / "delta" / "SKILL.md", skill_md("delta"))
    code, document = status_json(capsys, stocked, "--check")
    assert code == 3
    assert states(document) == {
        "skills/alpha": "clean", "drafts/beta": "clean",
        "skills/gamma": "untracked", "drafts/delta": "untracked",
    }
    gamma = next(i for i in document["items"] if i["path"] == "skills/gamma")
    assert gamma["committed"] is None and gamma["digest"].startswith("sha256:")


def test_modified_top_level_file(stocked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = stocked / "tools.yaml"
    path.write_text(path.read_text() + "# note\n")
    code, document = status_json(capsys, stocked, "--check")
    assert code == 3
    assert {f["path"]: f["status"] for f in document["files"]}["tools.yaml"] == "modified"


def test_an_uncommitted_library_yaml_edit_is_modified_with_a_hint_and_not_obeyed(
    stocked: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """library.yaml as committed is the one truth: a work-tree edit is shown, not obeyed."""
    path = stocked / "library.yaml"
    path.write_text(path.read_text().replace("max_item_files: 2000", "max_item_files: 1"))
    code, document = status_json(capsys, stocked, "--check")
    assert code == 3
    assert {f["path"]: f["status"] for f in document["files"]}["library.yaml"] == "modified"
    assert any("commit the edit" in hint for hint in document["hints"])
    assert run_main(capsys, "--library", str(stocked), "status").out.count("hint: ") == 1
    # The edited bound (one file per item) is not in force until it is committed.
    src = make_skill(sources, "two-files", extra_files={"notes.md": "n"})
    assert run_main(capsys, "--library", str(stocked), "retain", str(src)).code == 0


@requires_git
def test_exec_bit_change_is_drift(stocked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (stocked / "skills" / "alpha" / "notes" / "a.md").chmod(0o755)
    code, document = status_json(capsys, stocked, "--check")
    assert code == 3
    assert states(document)["skills/alpha"] == "modified"
    assert git_text(stocked, "status", "--porcelain").strip() == "M skills/alpha/notes/a.md"
    (stocked / "skills" / "alpha" / "run.sh").chmod(0o644)
    (stocked / "skills" / "alpha" / "notes" / "a.md").chmod(0o644)
    assert states(status_json(capsys, stocked)[1])["skills/alpha"] == "modified"


@requires_git
def test_mode_only_and_timestamp_changes_are_not_drift(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    item = stocked / "skills" / "alpha"
    (item / "notes" / "a.md").chmod(0o664)  # g+w
    (item / "run.sh").chmod(0o775)  # g+w on an executable
    (item / "SKILL.md").chmod(0o600)  # go-r
    os.utime(item / "SKILL.md", (1_000_000_000, 1_000_000_000))
    code, document = status_json(capsys, stocked, "--check")
    assert code == 0, document
    assert document["clean"] is True
    # git agrees (it only tracks the owner-executable bit; stat changes need a refresh)
    assert git_text(stocked, "status", "--porcelain") == ""


def test_symlink_in_an_item_is_drift(stocked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (stocked / "skills" / "alpha" / "link").symlink_to("SKILL.md")
    code, document = status_json(capsys, stocked, "--check")
    assert code == 3
    assert states(document)["skills/alpha"] == "modified"


def test_status_is_read_only_for_the_work_tree(
    stocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (stocked / "skills" / "alpha" / "SKILL.md").write_text("edited\n")
    before = tree_snapshot(stocked)
    status_json(capsys, stocked)
    assert tree_snapshot(stocked) == before


def test_status_on_a_non_library_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    result = run_main(capsys, "--library", str(plain), "status", "--json")
    assert result.code == 2
    assert json.loads(result.out)["kind"] == "error"
    assert tree_snapshot(plain, skip_git=False) == {}


# -- the stat cache ------------------------------------------------------------------------


class HashCounter:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[Path] = []
        real = statcache.hash_work_dir

        def counting(root: Path):  # type: ignore[no-untyped-def]
            self.calls.append(root)
            return real(root)

        monkeypatch.setattr(statcache, "hash_work_dir", counting)


def _cache_entries(library: Path) -> set[str]:
    lib = Library(library, GENERATED)
    file = ItemsFile(lib.cache_dir / statcache.ITEMS_FILE, identity_of(lib.git_dir))
    return {key for i in range(file.count) if (key := file.key(i)) is not None}


def test_second_status_reuses_the_stat_cache(
    stocked: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settle_files(monkeypatch)
    counter = HashCounter(monkeypatch)
    lib = Library(stocked, GENERATED)
    assert library_status(lib).clean
    assert len(counter.calls) == 2
    assert set(_cache_entries(stocked)) == {"skills/alpha", "drafts/beta"}

    assert library_status(lib).clean
    assert len(counter.calls) == 2, "an unchanged directory must not be re-read"

    (stocked / "skills" / "alpha" / "SKILL.md").write_bytes(b"changed\n")
    report = library_status(lib)
    assert len(counter.calls) == 3
    assert {i.path: i.status for i in report.items}["skills/alpha"] == "modified"


def test_a_file_stamped_at_or_after_the_scan_is_not_cached(stocked: Path) -> None:
    """As in git: an entry changed in the scan's own clock tick could hide an edit made in
    that same tick, so it is re-hashed next time."""
    time.sleep(0.05)  # beta's files: past the tick the fixture stamped them in
    later = time.time_ns() + 10 * 1_000_000_000
    os.utime(stocked / "skills" / "alpha" / "SKILL.md", ns=(later, later))
    assert library_status(Library(stocked, GENERATED)).clean
    assert _cache_entries(stocked) == {"drafts/beta"}


def test_files_written_before_the_scan_are_cached_at_once(stocked: Path) -> None:
    """The racy window is the filesystem's clock tick, not seconds of wall time: a status
    right after an install trusts what the install wrote."""
    time.sleep(0.05)  # past the tick the fixture's last file was stamped in
    assert library_status(Library(stocked, GENERATED)).clean
    assert _cache_entries(stocked) == {"skills/alpha", "drafts/beta"}


def test_the_stamp_is_never_made_through_a_linked_cache_directory(
    stocked: Path, tmp_path: Path
) -> None:
    """Without a stamp of its own the wall clock less RACY_SECONDS stands in."""
    lib = Library(stocked, GENERATED)
    shutil.rmtree(lib.cache_dir, ignore_errors=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    lib.cache_dir.symlink_to(elsewhere, target_is_directory=True)
    assert statcache.racy_after_ns(lib.cache_dir) <= (
        time.time_ns() - statcache.RACY_SECONDS * 1_000_000_000)
    assert library_status(lib).clean
    assert list(elsewhere.iterdir()) == []


def test_the_stamp_is_the_filesystems_clock_and_leaves_nothing(stocked: Path) -> None:
    lib = Library(stocked, GENERATED)
    library_status(lib)
    before = sorted(p.name for p in lib.cache_dir.iterdir())
    probe = lib.cache_dir / "probe"
    probe.write_bytes(b"")
    stamped = statcache.racy_after_ns(lib.cache_dir)
    assert probe.stat().st_mtime_ns <= stamped <= time.time_ns()
    probe.unlink()
    assert sorted(p.name for p in lib.cache_dir.iterdir()) == before


@pytest.mark.parametrize("clock", ["stamp", "settled"])
def test_same_size_edit_in_the_same_second_is_detected(
    stocked: Path, monkeypatch: pytest.MonkeyPatch, clock: str
) -> None:
    if clock == "settled":
        settle_files(monkeypatch)
    lib = Library(stocked, GENERATED)
    target = stocked / "skills" / "alpha" / "notes" / "a.md"
    assert library_status(lib).clean
    st = target.stat()
    target.write_bytes(b"bbbb\n")  # same size as "aaaa\n"
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same mtime
    assert target.stat().st_size == st.st_size
    report = library_status(lib)
    assert {i.path: i.status for i in report.items}["skills/alpha"] == "modified"


def test_damaged_cache_is_ignored(stocked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settle_files(monkeypatch)
    lib = Library(stocked, GENERATED)
    assert library_status(lib).clean
    for name in (statcache.ITEMS_FILE, statcache.DIGESTS_FILE):
        (lib.cache_dir / name).write_bytes(b"not a cache")
    (stocked / "skills" / "alpha" / "SKILL.md").write_bytes(b"changed\n")
    report = library_status(lib)
    assert {i.path: i.status for i in report.items}["skills/alpha"] == "modified"
    assert _cache_entries(stocked) == {"skills/alpha", "drafts/beta"}


def test_cached_digest_matches_a_fresh_computation(
    stocked: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settle_files(monkeypatch)
    lib = Library(stocked, GENERATED)
    first = {i.path: i.digest for i in library_status(lib).items}
    second = {i.path: i.digest for i in library_status(lib).items}
    shutil.rmtree(lib.cache_dir)
    third = {i.path: i.digest for i in library_status(lib).items}
    assert first == second == third


def test_cached_file_lists_still_see_entries_added_removed_or_replaced(
    stocked: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast path trusts a cached file list while no directory's mtime moved; every
    kind of entry change below an item must still be seen."""
    settle_files(monkeypatch)
    lib = Library(stocked, GENERATED)
    item = stocked / "skills" / "alpha"
    (item / "more").mkdir()
    (item / "more" / "a.md").write_bytes(b"a\n")
    assert {i.path: i.status for i in library_status(lib).items}["skills/alpha"] == "modified"
    shutil.rmtree(item / "more")

    def alpha() -> str:
        return {i.path: i.status for i in library_status(lib).items}["skills/alpha"]

    assert alpha() == "clean"  # caches the file list of a clean item
    assert alpha() == "clean"  # and now answers from it
    (item / "extra.md").write_bytes(b"new\n")
    assert alpha() == "modified"
    (item / "extra.md").unlink()
    assert alpha() == "clean"
    (item / "notes" / "b.md").write_bytes(b"b\n")  # a new entry one level down
    assert alpha() == "modified"
    (item / "notes" / "b.md").unlink()
    assert alpha() == "clean"
    original = (item / "SKILL.md").read_bytes()
    (item / "SKILL.md").unlink()
    (item / "SKILL.md").symlink_to(stocked / "library.yaml")
    assert alpha() == "modified"
    (item / "SKILL.md").unlink()
    (item / "SKILL.md").write_bytes(original)
    assert alpha() == "clean"


def test_a_new_file_is_seen_even_when_the_directory_mtime_is_put_back(
    stocked: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tar, rsync -a or touch -d can restore a directory's mtime after an entry was added;
    its ctime still moves, and the cached file list must not be trusted."""
    settle_files(monkeypatch)
    lib = Library(stocked, GENERATED)
    item = stocked / "skills" / "alpha"
    assert library_status(lib).clean
    assert library_status(lib).clean  # answered from the cached file list
    before = item.stat()
    (item / "extra.txt").write_bytes(b"new\n")
    os.utime(item, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert item.stat().st_mtime_ns == before.st_mtime_ns
    assert {i.path: i.status for i in library_status(lib).items}["skills/alpha"] == "modified"


def test_a_managed_item_replaced_by_a_symlink_is_not_clean(
    library: Path, tmp_path: Path
) -> None:
    from librarian.core.model import ItemFile
    from librarian.txn.changes import DirChange

    lib = Library(library, GENERATED)
    files = (ItemFile("SKILL.md", False, b"---\nname: beta\ndescription: B.\n---\nbody\n"),)
    hand_commit(lib, "install beta", [("Librarian-Event", "update")],
                [DirChange("sources/team/skills/beta", files)])
    item = library / "sources" / "team" / "skills" / "beta"
    copy = tmp_path / "copy"
    shutil.copytree(item, copy)
    shutil.rmtree(item)
    item.symlink_to(copy)
    report = library_status(lib)
    assert {i.path: i.status for i in report.items}["sources/team/skills/beta"] != "clean"


def test_a_stray_file_among_the_items_is_untracked(stocked: Path) -> None:
    lib = Library(stocked, GENERATED)
    (stocked / "skills" / "junk.txt").write_bytes(b"not an item\n")
    report = library_status(lib)
    assert not report.clean
    assert {f.path: f.status for f in report.files}["skills/junk.txt"] == "untracked"
