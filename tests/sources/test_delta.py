"""Planning from what changed upstream since the locked commit (``sources.delta``): the plan
is the one a full read of the new commit gives, whatever changed, and the full read is not
made when the change allows."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.helpers import cli, git, requires_git, skill_md
from support.sources_helpers import Upstream, edit_source, install

import librarian.sources.plan as plan_module
import librarian.sources.update as update_module
from librarian.agents.claude_manifests import GENERATED
from librarian.library.layout import Library
from librarian.ops.create import init_library
from librarian.sources.plan_values import SourcePlan
from librarian.sources.update import outdated

Cap = pytest.CaptureFixture[str]

FOLDERS = ("a", "a/b", "a-b", "a.b", "c/d/e", "z")
LEAVES = ("pdf", "docx", "x", "y-z")


def _memo(library: Path) -> Path:
    return library / ".git" / "librarian" / "cache" / "up-to-date.json"


class Watch:
    """Counts how each plan was read: from the delta, or in full."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.delta = 0
        self.full = 0
        changed_since, read_collection = plan_module.changed_since, plan_module.read_collection

        def counted_delta(*args: Any, **kwargs: Any) -> Any:
            found = changed_since(*args, **kwargs)
            self.delta += found is not None
            return found

        def counted_full(*args: Any, **kwargs: Any) -> Any:
            self.full += 1
            return read_collection(*args, **kwargs)

        monkeypatch.setattr(plan_module, "changed_since", counted_delta)
        monkeypatch.setattr(plan_module, "read_collection", counted_full)
        self.rebuilt = 0  # collections built again whole at a commit
        make_tree = update_module.make_tree

        def counted_make_tree(*args: Any, **kwargs: Any) -> Any:
            self.rebuilt += 1
            return make_tree(*args, **kwargs)

        monkeypatch.setattr(update_module, "make_tree", counted_make_tree)


def _plans_both_ways(library: Path, watch: Watch) -> tuple[SourcePlan, SourcePlan, bool]:
    """The plan of ``outdated`` with the remembered state (the delta, where it applies),
    and with none (always the full read); the memo is put back as it was. The third value
    says whether the first plan came from the delta."""
    memo = _memo(library)
    kept = memo.read_bytes() if memo.exists() else None
    before = watch.delta
    (first,) = outdated(Library(library, GENERATED)).plans
    used_delta = watch.delta > before
    memo.unlink(missing_ok=True)
    (full,) = outdated(Library(library, GENERATED)).plans
    if kept is not None:
        memo.write_bytes(kept)
    return first, full, used_delta


def _same(first: SourcePlan, full: SourcePlan) -> None:
    assert first.items == full.items
    assert first.skipped == full.skipped
    assert first.filtered_out == full.filtered_out
    assert first.warnings == full.warnings
    assert first == full


@pytest.fixture
def installed(tmp_path: Path, library: Path, capsys: Cap) -> tuple[Path, Upstream]:
    up = Upstream(tmp_path / "up.git")
    for folder in ("skills", "more/deep"):
        for leaf in ("one", "two", "three"):
            up.skill(f"{folder}/{leaf}-{folder.replace('/', '-')}")
    up.recipe("recipes/review")
    up.commit("first")
    install(capsys, library, up)
    return library, up


def test_a_change_of_one_item_is_planned_without_reading_the_collection(
        installed: tuple[Path, Upstream], capsys: Cap, monkeypatch: pytest.MonkeyPatch) -> None:
    library, up = installed
    watch = Watch(monkeypatch)
    up.skill("skills/one-skills", body="Better.\n").commit("one changed")
    up.skill("skills/four-skills").remove("more/deep/two-more-deep").commit("added, removed")
    first, full, used_delta = _plans_both_ways(library, watch)
    assert used_delta
    _same(first, full)
    assert {i.path: i.action for i in first.changes} == {
        "skills/one-skills": "update", "skills/four-skills": "add",
        "more/deep/two-more-deep": "remove"}
    full_reads, rebuilt = watch.full, watch.rebuilt
    assert cli(capsys, library, "update").code == 0
    assert watch.full == full_reads, "the update read the whole collection"
    assert watch.rebuilt == rebuilt, "the update built the whole collection again"
    # the update remembered its own commit: the next change is again a delta
    up.skill("more/deep/one-more-deep", body="Again.\n").commit("again")
    first, full, used_delta = _plans_both_ways(library, watch)
    assert used_delta
    _same(first, full)
    assert [i.path for i in first.changes] == ["more/deep/one-more-deep"]


def test_a_name_taken_twice_is_admitted_named_apart(
        installed: tuple[Path, Upstream], capsys: Cap, monkeypatch: pytest.MonkeyPatch) -> None:
    library, up = installed
    watch = Watch(monkeypatch)
    up.skill("zz/one-skills").commit("a second item named one-skills")
    first, full, used_delta = _plans_both_ways(library, watch)
    assert used_delta  # no verdict depends on another item's name: the delta holds
    _same(first, full)
    # both are admitted, named apart by the folders that tell them apart
    assert not any(s.path == "zz/one-skills" for s in first.skipped)
    assert {i.path: i.name for i in first.changes} == {"zz/one-skills": "team:zz:one-skills"}
    assert cli(capsys, library, "update").code == 0
    up.remove("skills/one-skills").commit("the other goes")
    first, full, used_delta = _plans_both_ways(library, watch)
    _same(first, full)
    assert {i.path: i.action for i in first.changes} == {"skills/one-skills": "remove"}


def test_skipped_items_keep_the_walks_order(
        installed: tuple[Path, Upstream], capsys: Cap, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk takes each directory's names in order, so ``a/b/bad4`` comes before
    ``a-b/bad2`` (a sort of whole paths puts ``-`` before ``/``): the skipped items, old
    and new, come in the full walk's order."""
    library, up = installed
    watch = Watch(monkeypatch)
    up.put("a/bad/SKILL.md", b"---\nname: [oops\n---\n")
    up.put("a-b/bad2/SKILL.md", b"---\nname: [oops\n---\n").commit("two bad items")
    assert cli(capsys, library, "update").code == 0
    up.put("a.b/bad3/SKILL.md", b"---\nname: [oops\n---\n")
    up.put("a/b/bad4/SKILL.md", b"---\nname: [oops\n---\n").commit("two more")
    first, full, used_delta = _plans_both_ways(library, watch)
    assert used_delta
    _same(first, full)
    assert [s.path for s in first.skipped] == ["a/b/bad4", "a/bad", "a-b/bad2", "a.b/bad3"]


def test_a_local_edit_and_a_change_upstream_merge_the_same_either_way(
        installed: tuple[Path, Upstream], capsys: Cap, monkeypatch: pytest.MonkeyPatch) -> None:
    library, up = installed
    watch = Watch(monkeypatch)
    item = library / "sources" / "team" / "skills" / "two-skills" / "SKILL.md"
    item.write_bytes(item.read_bytes() + b"\nA local line.\n")
    (library / "sources/team/more/deep/one-more-deep/SKILL.md").write_bytes(b"edited\n")
    up.put("skills/two-skills/extra.md", b"new file\n").commit("a file added upstream")
    first, full, used_delta = _plans_both_ways(library, watch)
    assert used_delta
    _same(first, full)
    assert {i.path: i.action for i in first.changes} == {"skills/two-skills": "merge"}
    # the edit of an item upstream did not change is kept, not looked at: status shows it
    assert [i.path for i in first.planned] == ["skills/two-skills"]


# --- any sequence of upstream changes, filters and local edits -----------------------------

def _item_path(folder: str, leaf: str, named_as: str | None = None) -> str:
    """An item's path, its name unique to its folder unless ``named_as`` another's."""
    return f"{folder}/{leaf}-{FOLDERS.index(named_as or folder)}"


_paths = st.builds(_item_path, st.sampled_from(FOLDERS), st.sampled_from(LEAVES))
_ops = st.one_of(
    # an item named as one of another folder: a collision, decided by the full read
    st.tuples(st.just("skill"), st.builds(_item_path, st.sampled_from(FOLDERS),
                                          st.sampled_from(LEAVES), st.sampled_from(FOLDERS)),
              st.integers(0, 3)),
    st.tuples(st.just("skill"), _paths, st.integers(0, 3)),
    st.tuples(st.just("recipe"), _paths, st.integers(0, 3)),
    st.tuples(st.just("remove"), _paths, st.just(0)),
    st.tuples(st.just("invalid"), _paths, st.just(0)),
    st.tuples(st.just("stray"), st.sampled_from(FOLDERS), st.integers(0, 3)),
    st.tuples(st.just("nest"), _paths, st.just(0)),
    st.tuples(st.just("edit"), _paths, st.integers(0, 3)),
)
_steps = st.lists(st.tuples(st.lists(_ops, min_size=1, max_size=4), st.booleans()),
                  min_size=1, max_size=5)
_filters: list[dict[str, tuple[str, ...]]] = [
    {}, {"include": ("a/",)}, {"exclude": ("a/b/", "*.b/")}, {"include": ("a*/", "z/")}]


def _apply(up: Upstream, library: Path, op: tuple[str, str, int]) -> None:
    kind, path, number = op
    if kind == "skill":
        up.remove(path).skill(path, body=f"Version {number}.\n")
    elif kind == "recipe":
        up.remove(path).recipe(path, script=f"echo {number}\n")
    elif kind == "remove":
        up.remove(path)
    elif kind == "invalid":
        up.remove(path).put(f"{path}/SKILL.md", b"---\nname: [oops\n---\n")
    elif kind == "stray":
        up.put(f"{path}/notes-{number}.txt", b"not an item\n")
    elif kind == "nest":  # an item inside an item: the outer one holds it as a file tree
        up.skill(f"{path}/inner")
    else:  # a local edit in the work tree, where the item is installed
        target = library / "sources" / "team" / path / "SKILL.md"
        if target.is_file() and not target.is_symlink():
            target.write_bytes(skill_md(path.rsplit("/", 1)[-1], body=f"Local {number}.\n"))


def _temporary_library(tmp_path: Path, counter: Iterator[int]) -> tuple[Path, Upstream]:
    root = tmp_path / f"case-{next(counter)}"
    library = root / "lib"
    init_library(library, "test-lib", GENERATED)
    up = Upstream(root / "up.git")
    up.skill(_item_path("a", "pdf")).skill(_item_path("z", "docx")).commit("first")
    return library, up


def _counter() -> Iterator[int]:
    number = 0
    while True:
        number += 1
        yield number


@pytest.mark.slow
@requires_git
@pytest.mark.parametrize("filters", _filters, ids=["none", "include", "exclude", "both"])
def test_any_change_is_planned_as_the_full_read_plans_it(
        tmp_path: Path, capsys: Cap, monkeypatch: pytest.MonkeyPatch,
        filters: dict[str, tuple[str, ...]]) -> None:
    watch = Watch(monkeypatch)
    counter = _counter()
    seen = {"delta": 0, "spliced": 0}

    @settings(max_examples=12, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(steps=_steps)
    def check(steps: list[tuple[list[tuple[str, str, int]], bool]]) -> None:
        # ``twin`` is updated from full reads only (its memo deleted before every update):
        # both must commit the same trees.
        library, up = _temporary_library(tmp_path, counter)
        twin = library.parent / "twin"
        init_library(twin, "test-lib", GENERATED)
        try:
            for each in (library, twin):
                install(capsys, each, up)
                if filters:
                    edit_source(each, "team", **filters)
                    assert cli(capsys, each, "update").code == 0
            for ops, then_update in steps:
                for op in ops:
                    _apply(up, library, op)
                    _apply(up, twin, op)
                up.commit("step")
                first, full, used_delta = _plans_both_ways(library, watch)
                _same(first, full)
                seen["delta"] += used_delta
                if then_update:
                    rebuilt = watch.rebuilt
                    done = cli(capsys, library, "update", "--force")
                    spliced = watch.rebuilt == rebuilt and "updated in" in done.out
                    _memo(twin).unlink(missing_ok=True)
                    twin_done = cli(capsys, twin, "update", "--force")
                    assert done.code == twin_done.code, (done.err, twin_done.err)
                    if done.code == 3:  # an item become part of another: refused either way
                        assert "update refused: upstream made" in done.err
                        assert "update refused: upstream made" in twin_done.err
                        continue
                    assert done.code == 0, done.err
                    seen["spliced"] += spliced
                    assert _root_tree(library) == _root_tree(twin)
        finally:
            shutil.rmtree(library.parent, ignore_errors=True)

    check()
    assert seen["delta"] > 0, "no sequence was planned from the delta"
    assert seen["spliced"] > 0, "no update spliced its collection"


def _root_tree(library: Path) -> str:
    return git(library, "rev-parse", "HEAD^{tree}").stdout.decode().strip()


@requires_git
def test_a_collection_a_hand_commit_touched_is_built_again_whole(
        tmp_path: Path, capsys: Cap, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a plan of the base remembers says nothing of what else a hand commit put in the
    collection: an update then builds it whole (it holds the locked items only), as an
    update without anything remembered does."""
    watch = Watch(monkeypatch)
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/pdf").skill("skills/docx").commit("first")
    libraries = []
    for name in ("lib", "twin"):
        library = tmp_path / name
        init_library(library, "test-lib", GENERATED)
        install(capsys, library, up)
        stray = library / "sources" / "team" / "skills" / "notes.txt"
        stray.write_bytes(b"committed by hand\n")
        git(library, "add", "-A")
        git(library, "commit", "-q", "-m", "a note in the collection, by hand")
        assert cli(capsys, library, "update").code == 0  # nothing new: remembered as such
        libraries.append(library)
    library, twin = libraries
    up.skill("skills/pdf", body="Better.\n").commit("second")
    first, full, used_delta = _plans_both_ways(library, watch)
    assert used_delta and not first.exact_base
    _same(first, full)
    rebuilt = watch.rebuilt
    assert cli(capsys, library, "update").code == 0
    assert watch.rebuilt == rebuilt + 1
    _memo(twin).unlink()
    assert cli(capsys, twin, "update").code == 0
    assert _root_tree(library) == _root_tree(twin)
    listed = git(library, "ls-tree", "-r", "--name-only", "HEAD", "sources/team").stdout
    assert b"notes.txt" not in listed


@requires_git
def test_an_edit_of_the_configuration_alone_keeps_the_collection_known_exact(
        installed: tuple[Path, Upstream], capsys: Cap, monkeypatch: pytest.MonkeyPatch) -> None:
    library, up = installed
    watch = Watch(monkeypatch)
    edit_source(library, "team", exclude=("nothing-here/",))  # selects every item still
    assert cli(capsys, library, "update").code == 0  # nothing to change: no commit
    up.skill("skills/one-skills", body="Better.\n").commit("one changed")
    rebuilt = watch.rebuilt
    assert cli(capsys, library, "update").code == 0
    assert watch.rebuilt == rebuilt, "the collection was built whole again"
    # a hand commit to the collection itself: the next update builds it whole
    (library / "sources" / "team" / "skills" / "notes.txt").write_bytes(b"by hand\n")
    git(library, "add", "-A")
    git(library, "commit", "-q", "-m", "a note in the collection, by hand")
    assert cli(capsys, library, "update").code == 0
    up.skill("skills/two-skills", body="Better.\n").commit("two changed")
    assert cli(capsys, library, "update").code == 0
    assert watch.rebuilt == rebuilt + 1


def _twin_of(tmp_path: Path, capsys: Cap, up: Upstream) -> Path:
    twin = tmp_path / "twin"
    init_library(twin, "test-lib", GENERATED)
    install(capsys, twin, up)
    return twin


def _updated_alike(capsys: Cap, library: Path, twin: Path) -> None:
    """``library`` updated as it is, ``twin`` from a full read: the same commit tree."""
    assert cli(capsys, library, "update").code == 0
    _memo(twin).unlink(missing_ok=True)
    assert cli(capsys, twin, "update").code == 0
    assert _root_tree(library) == _root_tree(twin)


@requires_git
@pytest.mark.parametrize("change", ["a new folder", "a folder's mode alone"])
def test_a_directory_of_another_mode_is_a_directory_still(
        installed: tuple[Path, Upstream], tmp_path: Path, capsys: Cap,
        monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    """git's fsck only reports a tree entry of mode 040755; the full walk takes it as a
    directory, so the comparison of two trees must too (found by an adversarial pass:
    the item in it was never installed, or an installed one removed)."""
    library, up = installed
    twin = _twin_of(tmp_path, capsys, up)
    watch = Watch(monkeypatch)
    if change == "a new folder":
        up.dir_modes["weird"] = 0o040755
        up.skill("weird/new")
    else:
        up.dir_modes["more"] = 0o040755
    up.skill("skills/one-skills", body="Better.\n").commit(change)
    first, full, used_delta = _plans_both_ways(library, watch)
    assert used_delta
    _same(first, full)
    expected = {"skills/one-skills": "update"}
    if change == "a new folder":
        expected["weird/new"] = "add"
    assert {i.path: i.action for i in first.changes} == expected
    _updated_alike(capsys, library, twin)


@requires_git
def test_a_plan_that_warned_is_not_remembered(
        installed: tuple[Path, Upstream], tmp_path: Path, capsys: Cap,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An item retain leaves a file out of is judged again by every full read, which warns
    again where it is nonconforming: a remembered plan would warn of nothing (found by an
    adversarial pass)."""
    library, up = installed
    twin = _twin_of(tmp_path, capsys, up)
    watch = Watch(monkeypatch)
    up.skill("skills/two-skills", name="another-name").put("skills/two-skills/.DS_Store", b"x")
    up.commit("a nonconforming item with a file retain leaves out")
    _updated_alike(capsys, library, twin)
    first, full, _ = _plans_both_ways(library, watch)  # nothing new upstream
    assert full.warnings and first.warnings == full.warnings
    _same(first, full)
    up.skill("more/deep/one-more-deep", body="Again.\n").commit("another item changed")
    first, full, _ = _plans_both_ways(library, watch)
    assert full.warnings
    _same(first, full)
    _updated_alike(capsys, library, twin)
