from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from librarian.content import sourcedir
from librarian.content.secretscan import COMMIT_POLICY
from librarian.content.sourcedir import DEFAULT_IGNORES, read_source_dir
from librarian.content.validate import load_source, validate_item
from librarian.core.manifests import RecipeManifest, SkillManifest
from librarian.core.model import ItemFile, Policy
from librarian.errors import UsageError, ValidationError

POLICY = Policy()
SKILL = b"---\nname: my-skill\ndescription: Does a thing.\n---\n# My skill\n"
RECIPE = (
    b"name: my-tool\ndescription: Runs a thing.\nexecution: sync\n"
    b"environment: shell\nentrypoint: run.sh\n"
)
GITHUB_TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"


def write(root: Path, rel: str, data: bytes = b"x\n", mode: int = 0o644) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)
    return path


def refusals(root: Path, policy: Policy = POLICY) -> tuple[str, ...]:
    with pytest.raises(ValidationError) as info:
        read_source_dir(root, policy)
    assert info.value.path == str(root)
    assert "\n" not in info.value.message
    return info.value.problems


@pytest.fixture
def skill_dir(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    write(root, "SKILL.md", SKILL)
    return root


# --- read_source_dir -----------------------------------------------------------------------


def test_reads_files_sorted_with_exec_bit(skill_dir: Path) -> None:
    write(skill_dir, "scripts/run.sh", b"#!/bin/sh\n", 0o755)
    write(skill_dir, "references/b.md")
    write(skill_dir, "assets/logo.bin", bytes(range(256)))
    (skill_dir / "empty" / "deeper").mkdir(parents=True)
    files = read_source_dir(skill_dir, POLICY)
    assert [f.path for f in files] == [
        "SKILL.md",
        "assets/logo.bin",
        "references/b.md",
        "scripts/run.sh",
    ]
    assert [f.executable for f in files] == [False, False, False, True]
    assert files[1].data == bytes(range(256))


def test_default_ignores(skill_dir: Path) -> None:
    assert DEFAULT_IGNORES == (".git/", "__pycache__/", "*.pyc", ".DS_Store")
    write(skill_dir, ".git/config")
    write(skill_dir, "pkg/__pycache__/m.cpython-311.pyc")
    write(skill_dir, "pkg/m.pyc")
    write(skill_dir, "pkg/.DS_Store")
    write(skill_dir, ".DS_Store")
    write(skill_dir, "pkg/m.py")
    assert [f.path for f in read_source_dir(skill_dir, POLICY)] == ["SKILL.md", "pkg/m.py"]


def test_librarianignore(skill_dir: Path) -> None:
    write(skill_dir, ".librarianignore", b"# comment\n*.log\nbuild/\n!keep.log\n/top.txt\n")
    write(skill_dir, "a.log")
    write(skill_dir, "keep.log")
    write(skill_dir, "build/out.bin")
    write(skill_dir, "top.txt")
    write(skill_dir, "sub/top.txt")
    paths = [f.path for f in read_source_dir(skill_dir, POLICY)]
    assert paths == [".librarianignore", "SKILL.md", "keep.log", "sub/top.txt"]


def test_ignored_links_and_secrets_are_not_refused(skill_dir: Path) -> None:
    write(skill_dir, ".librarianignore", b"node_modules/\nlink\n.env\n")
    write(skill_dir, "node_modules/x/a.js")
    (skill_dir / "node_modules" / "evil").symlink_to("/etc/passwd")
    (skill_dir / "link").symlink_to("SKILL.md")
    write(skill_dir, ".env", b"TOKEN=1\n")
    assert [f.path for f in read_source_dir(skill_dir, POLICY)] == [".librarianignore", "SKILL.md"]


def test_refuses_symlinks(skill_dir: Path, tmp_path: Path) -> None:
    (skill_dir / "to-file").symlink_to("SKILL.md")
    (skill_dir / "sub").mkdir()
    (skill_dir / "sub" / "to-dir").symlink_to(tmp_path)
    (skill_dir / "dangling").symlink_to("nowhere")
    problems = refusals(skill_dir)
    assert problems == (
        "dangling: is a symbolic link (links are never admitted)",
        "sub/to-dir: is a symbolic link (links are never admitted)",
        "to-file: is a symbolic link (links are never admitted)",
    )


def test_refuses_hard_links(skill_dir: Path, tmp_path: Path) -> None:
    os.link(write(tmp_path, "outside.txt"), skill_dir / "inside.txt")
    assert refusals(skill_dir) == ("inside.txt: is hard-linked (2 links; copy it instead)",)


def test_refuses_special_files(skill_dir: Path) -> None:
    os.mkfifo(skill_dir / "pipe")
    problems = list(refusals(skill_dir))
    assert problems == ["pipe: is a special file (fifo)"]


def test_refuses_sockets(tmp_path: Path) -> None:
    root = tmp_path / "s"
    write(root, "SKILL.md", SKILL)
    old = Path.cwd()
    os.chdir(root)  # AF_UNIX paths are short; bind relative to the item
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind("sock")
            assert refusals(root) == ("sock: is a special file (socket)",)
    finally:
        os.chdir(old)


def test_oversized_file_is_refused_without_reading(
    skill_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = skill_dir / "big.bin"
    with big.open("wb") as handle:
        handle.truncate(POLICY.max_file_bytes + 1)  # sparse: costs no disk
    real_read = sourcedir._read_file

    def guarded(path: str, *args: object, **kwargs: object) -> bytes | None:
        assert not path.endswith("big.bin"), "a file over the limit was read"
        return real_read(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sourcedir, "_read_file", guarded)
    assert refusals(skill_dir) == (
        f"big.bin: is {POLICY.max_file_bytes + 1} bytes (the limit per file is 8388608)",
    )


def test_too_many_files_and_bytes(skill_dir: Path) -> None:
    for i in range(5):
        write(skill_dir, f"f{i}.txt", b"0123456789")
    problems = refusals(skill_dir, Policy(max_item_files=4, max_item_bytes=40))
    assert problems == (
        "holds 6 files (the limit is 4)",
        f"holds {50 + len(SKILL)} bytes (the limit is 40)",
    )


def test_refuses_secrets(skill_dir: Path) -> None:
    write(skill_dir, ".env", b"A=1\n")
    write(skill_dir, "scripts/config.sh", f"T={GITHUB_TOKEN}\n".encode())
    write(skill_dir, ".env.example", b"A=\n")
    write(skill_dir, "config/.env.local.example", b"A=\n")
    assert tuple(shown(p) for p in refusals(skill_dir)) == (
        ".env: looks like a secret (.env file)",
        "scripts/config.sh: looks like a secret (GitHub token)",
    )


def shown(problem: str) -> str:
    """A secret refusal without the policy line it prints for the match."""
    head, sep, paste = problem.partition("; if it is not one, allow exactly this match in "
                                         "library.yaml: policy: {allowed_secrets: [sha256:")
    assert not sep or paste == paste[:64] + "]}, " + COMMIT_POLICY, problem
    return head


def test_refuses_non_utf8_names(skill_dir: Path) -> None:
    try:
        name = os.fsencode(skill_dir) + b"/bad\xff.txt"
        fd = os.open(name, os.O_CREAT | os.O_WRONLY, 0o644)
    except OSError:
        pytest.skip("file system refuses non-UTF-8 names")
    os.close(fd)
    assert refusals(skill_dir) == ("bad\\xff.txt: file name is not valid UTF-8",)


def test_collects_every_problem(skill_dir: Path) -> None:
    (skill_dir / "link").symlink_to("SKILL.md")
    os.mkfifo(skill_dir / "pipe")
    write(skill_dir, ".env")
    with pytest.raises(ValidationError) as info:
        read_source_dir(skill_dir, POLICY)
    assert len(info.value.problems) == 3
    assert all(problem in info.value.message for problem in info.value.problems)
    assert info.value.hint is not None and ".librarianignore" in info.value.hint


def test_missing_or_non_directory_root(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as info:
        read_source_dir(tmp_path / "nope", POLICY)
    assert not isinstance(info.value, ValidationError)
    assert "does not exist" in info.value.message
    with pytest.raises(UsageError, match="is not a directory"):
        read_source_dir(write(tmp_path, "file.md"), POLICY)


# --- validate_item -------------------------------------------------------------------------


def item(*extra: ItemFile, manifest: bytes = SKILL, kind: str = "SKILL.md") -> list[ItemFile]:
    return [ItemFile(kind, False, manifest), *extra]


def invalid(files: list[ItemFile], policy: Policy = POLICY, **kwargs: str) -> tuple[str, ...]:
    with pytest.raises(ValidationError) as info:
        validate_item(files, policy, where="skills/x", **kwargs)
    assert info.value.message.startswith("skills/x: invalid ")
    return info.value.problems


def test_validate_skill() -> None:
    files = item(ItemFile("b.sh", True, b"#!/bin/sh\n"), ItemFile("a.md", False, b"a"))
    result = validate_item(list(reversed(files)), POLICY, expected_name="my-skill")
    assert (result.kind, result.name, result.warnings) == ("skill", "my-skill", ())
    assert [f.path for f in result.files] == ["SKILL.md", "a.md", "b.sh"]
    assert isinstance(result.manifest, SkillManifest)
    assert result.digest.startswith("sha256:") and len(result.digest) == 71


def test_validate_recipe() -> None:
    files = item(ItemFile("run.sh", True, b"echo\n"), manifest=RECIPE, kind="recipe.yaml")
    result = validate_item(files, POLICY)
    assert (result.kind, result.name) == ("recipe", "my-tool")
    assert isinstance(result.manifest, RecipeManifest)


def test_recipe_entrypoint_must_exist() -> None:
    problems = invalid(item(manifest=RECIPE, kind="recipe.yaml"))
    assert problems == ("recipe.yaml: entrypoint: run.sh does not exist in the recipe",)


def test_unknown_recipe_key_is_named() -> None:
    files = item(
        ItemFile("run.sh", True, b""), manifest=RECIPE + b"owner: me\n", kind="recipe.yaml"
    )
    assert invalid(files)[0].startswith("recipe.yaml: owner: unknown key")


def test_kind_problems() -> None:
    assert invalid([ItemFile("README.md", False, b"")]) == (
        "holds neither SKILL.md nor recipe.yaml",
    )
    both = item(ItemFile("recipe.yaml", False, RECIPE))
    assert invalid(both)[0].startswith("holds both SKILL.md and recipe.yaml")
    nested = [ItemFile("sub/SKILL.md", False, SKILL)]
    assert invalid(nested) == ("holds neither SKILL.md nor recipe.yaml",)


def test_a_skill_is_named_by_its_directory() -> None:
    content = validate_item(item(), POLICY, expected_name="other")
    assert content.name == "other"
    assert content.warnings == ("SKILL.md: nonconforming [name-directory]: name 'my-skill' "
                                "differs from the directory 'other', which names the item",)
    assert invalid(item(), Policy(conformance="strict"), expected_name="other") == (
        content.warnings)
    recipe = item(ItemFile("run.sh", True, b"#!/bin/sh\n"), manifest=RECIPE, kind="recipe.yaml")
    assert invalid(recipe, expected_name="other") == (
        "name: 'my-tool' in recipe.yaml does not match the directory name 'other'",)


def test_an_invalid_item_name_is_refused_whatever_the_policy() -> None:
    bad = b"---\nname: My_Skill\ndescription: d\n---\n"
    assert invalid(item(manifest=bad)) == (
        "the item name 'My_Skill' may only hold a-z, 0-9 and '-' (an item is named by its "
        "directory: a-z, 0-9 and '-', at most 64)",)
    content = validate_item(item(manifest=bad), POLICY, expected_name="my-skill")
    assert [w.split("]")[0] for w in content.warnings] == [
        "SKILL.md: nonconforming [name-lowercase", "SKILL.md: nonconforming [name-characters",
        "SKILL.md: nonconforming [name-directory"]


def test_unknown_frontmatter_keys_kept_and_warned() -> None:
    data = b"---\nname: my-skill\ndescription: d\nversion: 2\ntags: [a]\n---\nbody\n"
    result = validate_item(item(manifest=data), POLICY)
    assert result.files[0].data == data
    assert isinstance(result.manifest, SkillManifest)
    assert result.manifest.unknown_keys == ("tags", "version")
    assert len(result.warnings) == 1 and "tags, version" in result.warnings[0]


def test_crlf_frontmatter() -> None:
    data = SKILL.replace(b"\n", b"\r\n")
    assert validate_item(item(manifest=data), POLICY).files[0].data == data


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("../x", "../x: is not a relative path inside the item"),
        ("/abs", "/abs: is not a relative path inside the item"),
        ("a//b", "a//b: is not a relative path inside the item"),
        ("", ": is not a relative path inside the item"),
        ("a/./b", "a/./b: is not a relative path inside the item"),
        ("x/.git/config", "x/.git/config: a .git entry cannot be stored"),
        (".GIT", ".GIT: a .git entry cannot be stored"),
    ],
)
def test_path_problems(path: str, expected: str) -> None:
    assert invalid(item(ItemFile(path, False, b""))) == (expected,)


def test_duplicate_and_file_directory_clash() -> None:
    files = item(
        ItemFile("a", False, b""), ItemFile("a/b", False, b""), ItemFile("a/b", False, b"")
    )
    assert invalid(files) == ("a/b: appears twice", "a: is both a file and a directory")


def test_bounds_and_secrets_hold_for_content_from_anywhere() -> None:
    policy = Policy(max_file_bytes=100, max_item_files=2, max_item_bytes=150)
    files = item(
        ItemFile("big", False, b"x" * 101), ItemFile("k.txt", False, GITHUB_TOKEN.encode())
    )
    assert tuple(shown(p) for p in invalid(files, policy)) == (
        "big: is 101 bytes (the limit per file is 100)",
        "holds 3 files (the limit is 2)",
        f"holds {len(SKILL) + 101 + len(GITHUB_TOKEN)} bytes (the limit is 150)",
        "k.txt: looks like a secret (GitHub token)",
    )


#: The names of three letters or fewer that Windows reserves for devices.
WINDOWS_DEVICES = {"con", "prn", "aux", "nul"}


@settings(max_examples=60, deadline=None, database=None)
@given(
    st.lists(
        st.from_regex(r"[a-z]{1,3}(/[a-z]{1,3}){0,2}", fullmatch=True).filter(
            # a Windows device name is refused, rightly (test_path_problems)
            lambda p: not WINDOWS_DEVICES & set(p.split("/"))), max_size=6, unique=True
    )
)
def test_validate_item_accepts_any_clean_tree(paths: list[str]) -> None:
    tops = {p.split("/")[0] for p in paths if "/" in p}
    paths = [p for p in paths if not any(q.startswith(p + "/") for q in paths) and p not in tops]
    files = [ItemFile(p, False, p.encode()) for p in paths]
    result = validate_item(item(*files), POLICY)
    assert [f.path for f in result.files] == sorted(["SKILL.md", *paths])


# --- load_source ---------------------------------------------------------------------------


def test_load_directory_under_any_name(skill_dir: Path) -> None:
    result = load_source(skill_dir, POLICY)
    assert (result.kind, result.name) == ("skill", "my-skill")
    assert load_source(skill_dir, POLICY, name="my-skill").digest == result.digest


def test_load_recipe_directory(tmp_path: Path) -> None:
    root = tmp_path / "whatever"
    write(root, "recipe.yaml", RECIPE)
    write(root, "run.sh", b"#!/bin/sh\necho hi\n", 0o755)
    result = load_source(root, POLICY)
    assert (result.kind, result.name) == ("recipe", "my-tool")
    assert [(f.path, f.executable) for f in result.files] == [
        ("recipe.yaml", False),
        ("run.sh", True),
    ]


def test_load_single_markdown_file(tmp_path: Path) -> None:
    source = write(tmp_path, "notes.md", SKILL.replace(b"\n", b"\r\n"), 0o755)
    result = load_source(source, POLICY)
    assert result.files == (ItemFile("SKILL.md", False, source.read_bytes()),)
    assert result.name == "my-skill"


def test_load_single_file_refusals(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="neither a directory nor a .md file"):
        load_source(write(tmp_path, "recipe.yaml", RECIPE), POLICY)
    with pytest.raises(ValidationError, match="frontmatter"):
        load_source(write(tmp_path, "plain.md", b"# just markdown\n"), POLICY)
    with pytest.raises(ValidationError, match="the limit per file is 10"):
        load_source(write(tmp_path, "big.md", SKILL), Policy(max_file_bytes=10))
    with pytest.raises(UsageError, match="does not exist"):
        load_source(tmp_path / "missing.md", POLICY)


def test_name_option_names_the_item(skill_dir: Path) -> None:
    content = load_source(skill_dir, POLICY, name="other-name")
    assert content.name == "other-name"
    assert [w.split(":")[1] for w in content.warnings] == [" nonconforming [name-directory]"]
    with pytest.raises(ValidationError) as info:
        load_source(skill_dir, Policy(conformance="strict"), name="other-name")
    assert "[name-directory]" in info.value.message
    assert info.value.hint is not None and "conformance: strict" in info.value.hint
    with pytest.raises(UsageError, match="invalid name"):
        load_source(skill_dir, POLICY, name="Bad Name")


def test_load_refuses_what_read_refuses(skill_dir: Path) -> None:
    (skill_dir / "link").symlink_to("SKILL.md")
    with pytest.raises(ValidationError, match="symbolic link"):
        load_source(skill_dir, POLICY)


_PART = st.sampled_from([".git", "__pycache__", "a.pyc", ".DS_Store", "src", "x", ".gitx",
                         "pyc", "notes.md", "__pycache__x", "b.pyc.txt"])


@settings(max_examples=400, deadline=None, database=None)
@given(st.lists(_PART, min_size=1, max_size=4), st.booleans())
def test_default_ignores_match_exactly_what_pathspec_matches(
    parts: list[str], as_dir: bool
) -> None:
    """The pathspec-free matcher for sources without .librarianignore must agree with
    pathspec's gitignore reading of DEFAULT_IGNORES on every path, file or directory."""
    import pathspec

    from librarian.content.sourcedir import DefaultIgnores

    path = "/".join(parts) + ("/" if as_dir else "")
    reference = pathspec.GitIgnoreSpec.from_lines(list(DEFAULT_IGNORES))
    assert DefaultIgnores().match_file(path) == bool(reference.match_file(path)), path
