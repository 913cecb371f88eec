"""`librarian retain`: create-only admission, one commit, and refusals that change nothing."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from support.helpers import (
    assert_git_consistent,
    assert_one_error_line,
    commit_config_edit,
    commit_count,
    git_text,
    head,
    library_state,
    make_recipe,
    make_skill,
    requires_git,
    run_main,
    skill_md,
    trailers,
    tree_snapshot,
    write,
)

from librarian.agents.claude_manifests import GENERATED
from librarian.library.layout import Library
from librarian.ops.retention import retain

AWS_KEY = "AKIA" + "Q3ZT7WBN5XK2LM4P"  # shaped like a real access key id (not EXAMPLE)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA0Zk3q8v5Jt2Lh7Xs9Yc4mNpQr6Wd1Ef8Gh3Ij5Kl7Mn9Op2Q\n"
    "-----END RSA PRIVATE KEY-----\n"
)


def retain_cli(capsys: pytest.CaptureFixture[str], library: Path, *args: str):  # type: ignore[no-untyped-def]
    return run_main(capsys, "--library", str(library), "retain", *args)


# -- what a retention makes ---------------------------------------------------------


def test_retain_skill_receipt_commit_and_work_tree(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = make_skill(sources, "pdf-tools", extra_files={
        "scripts/extract.sh": (b"#!/bin/sh\necho hi\n", 0o755),
        "references/deep/notes.md": "notes\n",
        "assets/logo.bin": bytes(range(256)),
    })
    before_head = head(library)
    result = retain_cli(capsys, library, str(src), "--json")
    assert result.code == 0, result.err
    receipt = result.json
    assert receipt["kind"] == "retained_skill"
    assert receipt["name"] == "pdf-tools"
    assert receipt["path"] == "skills/pdf-tools"
    assert receipt["digest"].startswith("sha256:") and len(receipt["digest"]) == 7 + 64
    assert receipt["commit"] == head(library)
    assert receipt["activation"] == "not_requested"

    # The work tree holds exactly the source's files, bytes and executable bits.
    assert tree_snapshot(library / "skills" / "pdf-tools") == tree_snapshot(src)
    # Exactly one commit, on top of the previous head.
    from dulwich.repo import Repo

    repo = Repo(str(library))
    try:
        assert [p.decode() for p in repo[receipt["commit"].encode()].parents] == [before_head]
    finally:
        repo.close()
    assert commit_count(library) == 2


@requires_git
def test_retain_commit_has_trailers_and_leaves_git_clean(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = make_skill(sources, "notes", extra_files={"run.sh": (b"#!/bin/sh\n", 0o755)})
    receipt = retain_cli(capsys, library, str(src), "--json", "--evidence", "used twice").json
    subject = git_text(library, "log", "-1", "--format=%s").strip()
    assert subject == "retain skill notes"
    found = dict(trailers(library))
    assert found["Librarian-Event"] == "retain"
    assert found["Librarian-Item"] == "skills/notes"
    assert found["Librarian-Digest"] == receipt["digest"]
    assert found["Librarian-Evidence"] == "used twice"
    modes = git_text(library, "ls-tree", "-r", "HEAD", "skills/notes").splitlines()
    by_path = {line.split("\t")[1]: line.split()[0] for line in modes}
    assert by_path == {"skills/notes/SKILL.md": "100644", "skills/notes/run.sh": "100755"}
    assert_git_consistent(library)


@requires_git
@pytest.mark.parametrize("evidence", [None, "", "   "])
def test_missing_evidence_is_recorded_as_unknown(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str], evidence: str | None
) -> None:
    src = make_skill(sources, "plain")
    args = [str(src)] + (["--evidence", evidence] if evidence is not None else [])
    assert retain_cli(capsys, library, *args).code == 0
    assert ("Librarian-Evidence", "unknown") in trailers(library)


@requires_git
def test_evidence_with_newlines_cannot_forge_trailers(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = make_skill(sources, "forge")
    evidence = "fine\n\nLibrarian-Event: retire\nLibrarian-Item: skills/other"
    assert retain_cli(capsys, library, str(src), "--evidence", evidence).code == 0
    found = trailers(library)
    assert [v for k, v in found if k == "Librarian-Event"] == ["retain"]
    assert [v for k, v in found if k == "Librarian-Item"] == ["skills/forge"]


def test_retain_recipe_and_draft(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = make_recipe(sources, "word-count")
    receipt = retain_cli(capsys, library, str(recipe), "--json").json
    assert (receipt["kind"], receipt["path"]) == ("retained_recipe", "recipes/word-count")
    assert receipt["activation"] == "not_requested"
    assert os.access(library / "recipes" / "word-count" / "run.sh", os.X_OK)

    draft = make_skill(sources, "rough-idea")
    receipt = retain_cli(capsys, library, str(draft), "--draft", "--json").json
    assert (receipt["kind"], receipt["path"]) == ("draft", "drafts/rough-idea")
    assert receipt["activation"] == "not_requested"
    assert (library / "drafts" / "rough-idea" / "SKILL.md").is_file()

    draft_recipe = make_recipe(sources, "rough-tool")
    receipt = retain_cli(capsys, library, str(draft_recipe), "--draft", "--json").json
    assert (receipt["kind"], receipt["path"]) == ("draft", "drafts/rough-tool")
    assert commit_count(library) == 4
    assert_git_consistent(library)


def test_retain_a_single_markdown_file(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write(tmp_path / "some-notes.md", skill_md("quick-tip", body="# Tip\n"), 0o755)
    receipt = retain_cli(capsys, library, str(source), "--json").json
    assert (receipt["kind"], receipt["name"], receipt["path"]) == (
        "retained_skill", "quick-tip", "skills/quick-tip")
    assert tree_snapshot(library / "skills" / "quick-tip") == {
        "SKILL.md": ("file", False, source.read_bytes())
    }
    assert_git_consistent(library)


def test_ignores_are_honoured(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = make_skill(sources, "ignoring", extra_files={
        ".git/config": "[core]\n",
        "__pycache__/mod.cpython-311.pyc": b"\x00\x01",
        "lib/__pycache__/x.pyc": b"\x00",
        "lib/mod.py": "print(1)\n",
        "lib/stray.pyc": b"\x00",
        ".DS_Store": b"\x00\x00",
        "assets/.DS_Store": b"\x00",
        "build/out.txt": "built\n",
        "debug.log": "log\n",
        "keep.log": "kept\n",
        ".librarianignore": "build/\n*.log\n!keep.log\n",
    })
    receipt = retain_cli(capsys, library, str(src), "--json").json
    stored = set(tree_snapshot(library / "skills" / "ignoring"))
    assert stored == {"SKILL.md", "lib/", "lib/mod.py", "keep.log", ".librarianignore"}
    assert receipt["files"] == 4
    assert_git_consistent(library)


def test_executable_bit_is_kept_and_other_bits_are_not(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = make_skill(sources, "modes", extra_files={
        "tool.sh": (b"#!/bin/sh\n", 0o700),
        "shared.txt": (b"text\n", 0o664),
    })
    assert retain_cli(capsys, library, str(src)).code == 0
    item = library / "skills" / "modes"
    assert (item / "tool.sh").stat().st_mode & stat.S_IXUSR
    assert not (item / "shared.txt").stat().st_mode & stat.S_IXUSR
    assert not (item / "SKILL.md").stat().st_mode & stat.S_IXUSR
    assert_git_consistent(library)


def test_large_item_is_written_as_a_pack(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Above 256 new objects the commit's objects go into one pack instead of loose files."""
    files = {f"d/{n // 50}/f{n}.txt": f"file {n}\n" for n in range(300)}
    src = make_skill(sources, "big", extra_files=files)
    packs = library / ".git" / "objects" / "pack"
    before = set(packs.glob("*.pack"))
    result = retain_cli(capsys, library, str(src), "--json")
    assert result.code == 0, result.err
    assert len(set(packs.glob("*.pack")) - before) == 1
    assert tree_snapshot(library / "skills" / "big") == tree_snapshot(src)
    assert_git_consistent(library)


def test_retain_name_option_names_the_item(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = make_skill(sources, "named")
    assert retain_cli(capsys, library, str(src), "--name", "named").code == 0
    other = make_skill(sources, "second")
    result = retain_cli(capsys, library, str(other), "--name", "different", "--json")
    assert result.code == 0, result.err
    assert result.json["path"] == "skills/different"
    assert result.json["warnings"] == [
        "SKILL.md: nonconforming [name-directory]: name 'second' differs from the directory "
        "'different', which names the item"]
    assert (library / "skills" / "different" / "SKILL.md").read_bytes() == (
        other / "SKILL.md").read_bytes()


def test_an_invalid_frontmatter_name_falls_back_to_the_directory(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = make_skill(sources, "bad--name", dirname="bad")
    result = retain_cli(capsys, library, str(src), "--json")
    assert result.code == 0, result.err
    assert result.json["path"] == "skills/bad"
    assert [w.split("]")[0] for w in result.json["warnings"]] == [
        "SKILL.md: nonconforming [name-consecutive-hyphens",
        "SKILL.md: nonconforming [name-directory"]


def test_human_output_is_concise(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = retain_cli(capsys, library, str(make_skill(sources, "human")))
    assert result.code == 0
    assert "skills/human" in result.out and "sha256:" in result.out
    assert result.err == ""


# -- refusals: each leaves HEAD, the work tree and .git/librarian exactly as they were --

Setup = Callable[[Path, Path], tuple[Path, list[str]]]


def _bad_name_option(lib: Path, src: Path) -> tuple[Path, list[str]]:
    return make_skill(src, "fine"), ["--name", "Bad_Name"]


def _name_not_matching_directory(lib: Path, src: Path) -> tuple[Path, list[str]]:
    return make_skill(src, "Upper"), []


def _frontmatter_not_closed(lib: Path, src: Path) -> tuple[Path, list[str]]:
    data = b"---\nname: open\ndescription: never closed\n# body\n"
    return make_skill(src, "open", skill_md_bytes=data), []


def _frontmatter_missing_description(lib: Path, src: Path) -> tuple[Path, list[str]]:
    return make_skill(src, "nodesc", skill_md_bytes=b"---\nname: nodesc\n---\nbody\n"), []


def _frontmatter_not_yaml(lib: Path, src: Path) -> tuple[Path, list[str]]:
    data = b"---\nname: [unclosed\ndescription: x\n---\nbody\n"
    return make_skill(src, "broken", skill_md_bytes=data), []


def _unknown_recipe_key(lib: Path, src: Path) -> tuple[Path, list[str]]:
    return make_recipe(src, "colourful", extra_yaml="colour: red\n"), []


def _missing_entrypoint(lib: Path, src: Path) -> tuple[Path, list[str]]:
    return make_recipe(src, "no-entry", with_entrypoint=False), []


def _neither_manifest(lib: Path, src: Path) -> tuple[Path, list[str]]:
    root = src / "nothing"
    write(root / "README.md", "hello\n")
    return root, []


def _symlink_in_source(lib: Path, src: Path) -> tuple[Path, list[str]]:
    root = make_skill(src, "linked")
    (root / "link.md").symlink_to("SKILL.md")
    return root, []


def _symlinked_directory(lib: Path, src: Path) -> tuple[Path, list[str]]:
    root = make_skill(src, "linkdir", extra_files={"real/a.txt": "a\n"})
    (root / "alias").symlink_to("real", target_is_directory=True)
    return root, []


def _hard_link(lib: Path, src: Path) -> tuple[Path, list[str]]:
    root = make_skill(src, "hard", extra_files={"data.txt": "shared\n"})
    (src / "elsewhere.txt").hardlink_to(root / "data.txt")
    return root, []


def _hard_linked_single_file(lib: Path, src: Path) -> tuple[Path, list[str]]:
    source = write(src / "single.md", skill_md("single"))
    (src / "other.md").hardlink_to(source)
    return source, []


def _fifo(lib: Path, src: Path) -> tuple[Path, list[str]]:
    root = make_skill(src, "piped")
    os.mkfifo(root / "pipe")
    return root, []


def _secret_env_file(lib: Path, src: Path) -> tuple[Path, list[str]]:
    return make_skill(src, "envy", extra_files={".env": "API_TOKEN=abc\n"}), []


def _secret_aws_key(lib: Path, src: Path) -> tuple[Path, list[str]]:
    return make_skill(src, "aws", extra_files={"config.txt": f"key = {AWS_KEY}\n"}), []


def _secret_private_key(lib: Path, src: Path) -> tuple[Path, list[str]]:
    return make_skill(src, "pem", extra_files={"deploy/key.txt": PEM}), []


def _oversized_file(lib: Path, src: Path) -> tuple[Path, list[str]]:
    root = make_skill(src, "huge")
    with (root / "big.bin").open("wb") as handle:
        handle.truncate(8 * 1024 * 1024 + 1)  # sparse: cheap to make, one byte too big
    return root, []


def _too_many_files(lib: Path, src: Path) -> tuple[Path, list[str]]:
    root = make_skill(src, "crowded")
    many = root / "many"
    many.mkdir()
    for number in range(2000):  # + SKILL.md = 2001 files
        (many / f"{number}.txt").write_bytes(b"")
    return root, []


def _not_markdown_file(lib: Path, src: Path) -> tuple[Path, list[str]]:
    return write(src / "notes.txt", skill_md("notes")), []


def _missing_source(lib: Path, src: Path) -> tuple[Path, list[str]]:
    return src / "does-not-exist", []


def _retain_first(lib: Path, item: Path, *flags: str) -> None:
    retain(Library(lib, GENERATED), item, draft="--draft" in flags)


def _taken_by_skill(lib: Path, src: Path) -> tuple[Path, list[str]]:
    _retain_first(lib, make_skill(src / "first", "taken"))
    return make_skill(src / "second", "taken", description="Another."), []


def _taken_by_recipe(lib: Path, src: Path) -> tuple[Path, list[str]]:
    _retain_first(lib, make_recipe(src / "first", "taken"))
    return make_skill(src / "second", "taken"), []


def _taken_by_draft(lib: Path, src: Path) -> tuple[Path, list[str]]:
    _retain_first(lib, make_skill(src / "first", "taken"), "--draft")
    return make_skill(src / "second", "taken"), []


def _draft_shadowing_a_skill(lib: Path, src: Path) -> tuple[Path, list[str]]:
    _retain_first(lib, make_skill(src / "first", "taken"))
    return make_skill(src / "second", "taken"), ["--draft"]


def _untracked_directory_at_target(lib: Path, src: Path) -> tuple[Path, list[str]]:
    write(lib / "skills" / "squatter" / "SKILL.md", skill_md("squatter", "Mine, uncommitted."))
    return make_skill(src, "squatter"), []


def _untracked_draft_directory_at_target(lib: Path, src: Path) -> tuple[Path, list[str]]:
    write(lib / "drafts" / "squatter" / "notes.txt", "local work\n")
    return make_skill(src, "squatter"), ["--draft"]


REFUSALS: list[tuple[str, Setup, int, str]] = [
    ("bad-name-option", _bad_name_option, 2, "Bad_Name"),
    ("bad-name-uppercase", _name_not_matching_directory, 2, "Upper"),
    ("frontmatter-not-closed", _frontmatter_not_closed, 2, "frontmatter"),
    ("frontmatter-no-description", _frontmatter_missing_description, 2, "description"),
    ("frontmatter-not-yaml", _frontmatter_not_yaml, 2, "YAML"),
    ("unknown-recipe-key", _unknown_recipe_key, 2, "colour"),
    ("missing-entrypoint", _missing_entrypoint, 2, "run.sh"),
    ("neither-manifest", _neither_manifest, 2, "SKILL.md"),
    ("symlink", _symlink_in_source, 2, "link.md"),
    ("symlinked-directory", _symlinked_directory, 2, "alias"),
    ("hard-link", _hard_link, 2, "data.txt"),
    ("hard-linked-md-file", _hard_linked_single_file, 2, "hard-linked"),
    ("fifo", _fifo, 2, "pipe"),
    ("secret-env-file", _secret_env_file, 2, ".env"),
    ("secret-aws-key", _secret_aws_key, 2, "config.txt"),
    ("secret-private-key", _secret_private_key, 2, "deploy/key.txt"),
    ("oversized-file", _oversized_file, 2, "big.bin"),
    ("too-many-files", _too_many_files, 2, "2001 files"),
    ("not-markdown", _not_markdown_file, 2, "notes.txt"),
    ("missing-source", _missing_source, 2, "does-not-exist"),
    ("taken-by-skill", _taken_by_skill, 3, "skills/taken"),
    ("taken-by-recipe", _taken_by_recipe, 3, "recipes/taken"),
    ("taken-by-draft", _taken_by_draft, 3, "drafts/taken"),
    ("draft-shadowing-skill", _draft_shadowing_a_skill, 3, "skills/taken"),
    ("untracked-dir-at-target", _untracked_directory_at_target, 3, "skills/squatter"),
    ("untracked-draft-dir", _untracked_draft_directory_at_target, 3, "drafts/squatter"),
]


@pytest.mark.parametrize(("setup", "code", "mentions"),
                         [pytest.param(s, c, m, id=i) for i, s, c, m in REFUSALS])
def test_refusal_changes_nothing(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str],
    setup: Setup, code: int, mentions: str,
) -> None:
    source, extra = setup(library, sources)
    source_before = tree_snapshot(source) if source.is_dir() else None
    before = library_state(library)
    commits = commit_count(library)

    result = retain_cli(capsys, library, str(source), *extra, "--json")

    assert result.code == code, result.err
    document = result.json  # exactly one JSON document on stdout
    assert document["kind"] == "error" and document["exit_code"] == code
    assert mentions in document["error"], document
    assert mentions in assert_one_error_line(result.err)
    assert library_state(library) == before
    assert commit_count(library) == commits
    if source_before is not None:
        assert tree_snapshot(source) == source_before  # the source is only read
    assert_git_consistent_unless_untracked(library, before.tree)


def assert_git_consistent_unless_untracked(library: Path, tree: dict[str, object]) -> None:
    committed_only = not any(p.startswith(("skills/squatter", "drafts/squatter")) for p in tree)
    if committed_only:
        assert_git_consistent(library)


def test_refusal_lists_every_problem_on_one_line(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = make_skill(sources, "many-problems", extra_files={".env": "X=1\n"})
    (src / "link").symlink_to("SKILL.md")
    result = retain_cli(capsys, library, str(src))
    assert result.code == 2
    line = assert_one_error_line(result.err)
    assert ".env" in line and "link" in line  # every problem, not the first
    assert "more)" not in line
    assert result.out == ""
    document = retain_cli(capsys, library, str(src), "--json").json
    assert len(document["problems"]) >= 2
    assert all(problem in document["error"] for problem in document["problems"])


def test_policy_in_library_yaml_overrides_the_default_bounds(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    commit_config_edit(library, "max_item_files: 2000", "max_item_files: 3")
    src = make_skill(sources, "four-files", extra_files={"a": "a", "b": "b", "c": "c"})
    before = library_state(library)
    result = retain_cli(capsys, library, str(src))
    assert result.code == 2
    assert "the limit is 3" in assert_one_error_line(result.err)
    assert library_state(library) == before
