"""Generated files under plain git: the merge driver `hooks install` registers merges them
by meaning; `retire` keeps library.yaml's skill lists naming present skills; `check` and
`status --check` reject generated files that a merge or a hand commit left wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.helpers import GIT, git, git_text, make_recipe, make_skill
from support.team_helpers import act

from librarian.formats.claude_plugin import VisibleSkill, marketplace_json, plugin_json
from librarian.formats.config import (
    LibraryConfig,
    LockedSource,
    ToolEntry,
    dump_library_config,
    dump_lock,
    dump_tools,
    load_library_config,
    load_tools,
)
from librarian.formats.threeway import ThreeWayConflict, merge_generated, merge_set

DIGEST = "sha256:" + "a" * 64
OTHER = "sha256:" + "b" * 64


def _config(hidden: tuple[str, ...] = (), resident: tuple[str, ...] = ()) -> bytes:
    return dump_library_config(LibraryConfig("team", hidden=hidden, resident=resident))


def test_skill_lists_merge_as_sets() -> None:
    merged = merge_generated("library.yaml", _config(("a", "gone")), _config(("a", "b")),
                             _config(("c", "gone")))
    assert merged is not None
    assert load_library_config(merged).hidden == ("b", "c")  # "gone" removed by one side


def test_tools_merge_by_name_and_a_clash_is_named() -> None:
    base = dump_tools({})
    ours = dump_tools({"t1": ToolEntry("recipes/t1", DIGEST)})
    theirs = dump_tools({"t2": ToolEntry("recipes/t2", DIGEST)})
    merged = merge_generated("tools.yaml", base, ours, theirs)
    assert merged is not None and set(load_tools(merged)) == {"t1", "t2"}
    clash = dump_tools({"t1": ToolEntry("recipes/t1", OTHER)})
    with pytest.raises(ThreeWayConflict, match="tool 't1'"):
        merge_generated("tools.yaml", base, ours, clash)


def test_lock_pins_merge_per_source() -> None:
    pin = LockedSource("https://example.org/a.git", "main", "c" * 40, {"skills/x": DIGEST})
    other = LockedSource("https://example.org/b.git", "main", "d" * 40, {"skills/y": DIGEST})
    merged = merge_generated("librarian.lock", dump_lock({}), dump_lock({"a": pin}),
                             dump_lock({"b": other}))
    assert merged == dump_lock({"a": pin, "b": other})


def test_manifests_merge_to_what_the_visible_skills_give() -> None:
    def both(*paths: str) -> dict[str, bytes]:
        skills = [VisibleSkill(p, p.startswith("sources/")) for p in paths]
        return {"m": marketplace_json("team", skills), "p": plugin_json("team", skills)}

    base = both("skills/a", "sources/s/skills/z")
    ours = both("skills/a", "skills/b", "sources/s/skills/z")
    theirs = both("skills/c", "sources/s/skills/y", "sources/s/skills/z")
    want = both("skills/b", "skills/c", "sources/s/skills/y", "sources/s/skills/z")
    for key, path in (("m", ".claude-plugin/marketplace.json"),
                      ("p", ".claude-plugin/plugin.json")):
        assert merge_generated(path, base[key], ours[key], theirs[key]) == want[key]


names = st.lists(st.sampled_from("abcdef"), unique=True).map(tuple)


@given(names, names, names)
def test_a_set_merge_keeps_each_sides_own_change(base: tuple[str, ...], ours: tuple[str, ...],
                                                theirs: tuple[str, ...]) -> None:
    merged = set(merge_set(base, ours, theirs))
    assert merged == set(merge_set(base, theirs, ours))
    assert set(ours) - set(base) <= merged and set(theirs) - set(base) <= merged
    assert not (set(base) - set(ours)) & merged and not (set(base) - set(theirs)) & merged
    assert set(merge_set(base, ours, base)) == set(ours)


def test_retire_takes_the_skill_off_the_lists_and_check_names_a_stale_entry(
        library: Path, sources: Path) -> None:
    assert act(library, "retain", str(make_skill(sources, "beta"))) == 0
    assert act(library, "hide", "beta") == 0
    assert act(library, "retire", "beta") == 0
    assert b"beta" not in (library / "library.yaml").read_bytes()
    assert act(library, "check") == 0
    (library / "library.yaml").write_bytes(_config(("beta",)).replace(b"team", b"test-lib"))
    assert act(library, "check") == 2


@pytest.mark.skipif(GIT is None, reason="the git binary is not installed")
def test_plain_git_merges_generated_files_without_conflict(tmp_path: Path) -> None:
    from support.team_helpers import bare_with_library

    from librarian.agents.claude_manifests import GENERATED
    from librarian.ops.hooks import clone_library

    base = tmp_path / "srv"
    base.mkdir()
    bare = bare_with_library(base)
    first, second = tmp_path / "a", tmp_path / "b"
    for clone in (first, second):
        clone_library(str(bare), clone, GENERATED)
    assert "merge=librarian" in (first / ".git" / "info" / "attributes").read_text()
    assert "merge-driver" in git_text(first, "config", "merge.librarian.driver")
    for clone, name in ((first, "one"), (second, "two")):
        assert act(clone, "retain", str(make_skill(tmp_path / name, f"skill-{name}"))) == 0
        assert act(clone, "retain", str(make_recipe(tmp_path / name, f"tool-{name}"))) == 0
        assert act(clone, "expose", f"tool-{name}") == 0
        assert act(clone, "hide", f"skill-{name}") == 0
    git(first, "push", "-q", "origin", "main")
    merged = git(second, "pull", "--no-rebase", "-q", "--no-edit", check=False)
    assert merged.returncode == 0, merged.stderr.decode()
    assert act(second, "check") == 0 and act(second, "status", "--check") == 0
    yaml = (second / "library.yaml").read_text()
    assert "- skill-one" in yaml and "- skill-two" in yaml


def test_status_check_fails_on_a_generated_file_check_rejects(library: Path,
                                                               sources: Path) -> None:
    assert act(library, "retain", str(make_skill(sources, "alpha"))) == 0
    assert act(library, "status", "--check") == 0
    manifest = library / ".claude-plugin" / "marketplace.json"
    manifest.write_bytes(manifest.read_bytes() + b"{}\n")  # what merge=union leaves
    git(library, "commit", "-qam", "a union merge by hand", "--no-verify")
    assert act(library, "check") == 2
    assert act(library, "status") == 0  # the work tree matches the commit...
    assert act(library, "status", "--check") == 3  # ...but check rejects what it holds
