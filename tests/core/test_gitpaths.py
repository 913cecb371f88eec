"""Git's path rules (librarian.gitpaths), judged by git's own test tables and by git fsck."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.helpers import GIT, git, git_env, requires_git

from librarian.core.gitpaths import (
    PLAIN_CHUNK,
    collisions,
    first_path_problem,
    is_dotgit_name,
    is_dotgitmodules,
    path_problem,
    segment_problem,
)

ZWNJ = "\u200c"

# t/t1450-fsck.sh "fsck notices ... in trees", t/t0060 and a hostile-path review.
DOTGIT_NAMES = [
    ".git", ".GIT", ".Git", ".gIt", f".gI{ZWNJ}T", ".g\u200dit", "\ufeff.git",
    f".git{ZWNJ}", "git~1", "GIT~1", "Git~1", ".git.", ".git ", ".git. .", "git~1.",
    "git~1 ", ".git::$INDEX_ALLOCATION", "git~1::$INDEX_ALLOCATION", ".git:stream",
    ".\\.GIT\\foobar", ".git\\foobar", "x\\git~1",
]
NOT_DOTGIT = [
    "git", ".gitx", ".git-x", "x.git", "git~2", "git~10", "..git", ".gi", "gi~1",
    ".github", ".gitignore", " .git", "a.git.", "git~1x",
]
# t/t0060-path-utils.sh 'match .gitmodules'
DOTGITMODULES = [
    ".gitmodules", f".git{ZWNJ}modules", ".Gitmodules", ".gitmoduleS", ".gitmodules ",
    ".gitmodules.", ".gitmodules  ", ".gitmodules. ", ".gitmodules .", ".gitmodules..",
    ".Gitmodules . ", "GITMOD~1", "gitmod~1", "GITMOD~2", "gitmod~3", "GITMOD~4",
    "GITMOD~1 ", "gitmod~2.", "gitmod~4 . ", "GI7EBA~1", "gi7eba~9", "GI7EB~10", "GI7EB~99",
    "GI7E~100", "GI7E~999", "~1000000", "~9999999", ".gitmodules:$DATA",
    "gitmod~4 . :$DATA",
]
NOT_DOTGITMODULES = [
    ".gitmodules x", ".gitmodules .x", " .gitmodules", "..gitmodules", "gitmodules",
    ".gitmodule", ".gitmodules x ", "GI7EBA~", "GI7EBA~0", "GI7EBA~~1", "GI7EBA~X",
    "Gx7EBA~1", "GI7EBX~1", "GI7EB~1", "GI7EB~01", "GI7EB~1X", ".gitmodules,:$DATA",
]
# t/t0060-path-utils.sh 'is_valid_path() on Windows' (one segment each where git splits).
WINDOWS_VALID = ["win32", "win32 x", "comm", "conout.c", "com0.c", "lptN", "hello.txt"]
WINDOWS_INVALID = [
    "win32 ", "win32.", "win32 . .", "colon:test", "AUX.c", "conOut$  .xyz", "lpt8",
    "com9.c", "lpt*", "Nul", "PRN.", "a<b", "a|b", 'a"b', "a?b", "tab\there", "con",
]


@pytest.mark.parametrize("name", DOTGIT_NAMES)
def test_names_git_reads_as_dotgit_are_refused(name: str) -> None:
    assert is_dotgit_name(name)
    assert segment_problem(name) is not None
    assert path_problem(f"scripts/{name}/run.sh") is not None


@pytest.mark.parametrize("name", NOT_DOTGIT)
def test_names_near_dotgit_are_not_dotgit(name: str) -> None:
    assert not is_dotgit_name(name)


@pytest.mark.parametrize("name", DOTGITMODULES)
def test_dotgitmodules_spellings_match(name: str) -> None:
    assert is_dotgitmodules(name)
    assert segment_problem(name) is not None


@pytest.mark.parametrize("name", NOT_DOTGITMODULES)
def test_names_near_dotgitmodules_do_not_match(name: str) -> None:
    assert not is_dotgitmodules(name)


@pytest.mark.parametrize("name", WINDOWS_VALID)
def test_windows_valid_names_pass(name: str) -> None:
    assert segment_problem(name) is None


@pytest.mark.parametrize("name", WINDOWS_INVALID)
def test_windows_invalid_names_are_refused(name: str) -> None:
    assert segment_problem(name) is not None


@pytest.mark.parametrize(
    "path", ["", "/abs", "a//b", "a/./b", "a/../b", "..", "trailing/", "nul\x00byte"]
)
def test_paths_that_are_not_relative_inside_are_refused(path: str) -> None:
    assert path_problem(path) is not None


def test_ordinary_paths_pass() -> None:
    for path in ("SKILL.md", "scripts/run.sh", "references/a b.md", ".gitignore",
                 ".github/workflows/ci.yml", "assets/logo.png", "é/ü.md", "notes.md"):
        assert path_problem(path) is None, path


def test_case_and_normalisation_collisions_in_one_folder() -> None:
    nfc, nfd = "caf\u00e9.md", "cafe\u0301.md"
    found = collisions(["Notes.md", "notes.md", "a/x", "b/x", nfc, nfd, "Dir/a", "dir/b",
                        "straße", "STRASSE", f"a{ZWNJ}b", "ab"])
    pairs = {tuple(sorted(pair)) for pair in found}
    assert ("Notes.md", "notes.md") in pairs
    assert tuple(sorted((nfc, nfd))) in pairs
    assert ("Dir", "dir") in pairs
    assert ("STRASSE", "straße") in pairs
    assert ("ab", f"a{ZWNJ}b") in pairs
    assert not any("x" in pair[0].split("/")[-1:] for pair in found)


def test_no_collision_across_folders() -> None:
    assert collisions(["a/readme.md", "b/README.md", "a/b", "a/c"]) == []


_ALPHABET = list(".gGiItT~1 :\\") + [ZWNJ, "\u200d", "\ufeff", "x", "m", "o", "\u00e9"]


def _fsck_dotgit(names: list[str], repo: Path) -> set[str]:
    """The names git fsck reports as hasDotgit: one tree per name, one fsck run."""
    empty = git(repo, "hash-object", "-w", "--stdin", input=b"").stdout.decode().strip()
    batch = "\n".join(f"100644 blob {empty}\t{name}\n" for name in names).encode()
    ids = git(repo, "mktree", "--batch", input=batch).stdout.decode().split()
    by_id = dict(zip(ids, names, strict=True))
    result = subprocess.run([str(GIT), "fsck", "--strict", "--no-dangling"], cwd=repo,
                            capture_output=True, env=git_env(), check=False)
    flagged = re.findall(r"error in tree ([0-9a-f]+): hasDotgit", result.stderr.decode())
    return {by_id[tree] for tree in flagged if tree in by_id}


@requires_git
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(_ALPHABET, min_size=1, max_size=7), min_size=1, max_size=40,
                unique=True))
def test_dotgit_agrees_with_git_fsck(tmp_path: Path, names: list[str]) -> None:
    names = [n for n in names if n not in (".", "..")]
    if not names:
        return
    repo = tmp_path / "judge"
    if not repo.exists():
        git(tmp_path, "init", "-q", str(repo))
    ours = {n for n in names if is_dotgit_name(n)}
    assert ours == _fsck_dotgit(names, repo)


@requires_git
def test_known_tables_agree_with_git_fsck(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "judge")
    names = [n for n in DOTGIT_NAMES + NOT_DOTGIT if "\\" not in n or n.count("\\") < 3]
    assert _fsck_dotgit(names, tmp_path / "judge") == set(DOTGIT_NAMES) & set(names)


@given(st.text(min_size=1, max_size=12))
def test_path_problem_is_total_and_refuses_what_git_would(name: str) -> None:
    problem = path_problem(name)
    if problem is None:
        parts = name.split("/")
        assert all(p not in ("", ".", "..") for p in parts)
        assert not any(is_dotgit_name(p) or is_dotgitmodules(p) for p in parts)


@given(st.text(st.characters(blacklist_characters="/\x00"), min_size=1, max_size=8))
def test_a_name_collides_with_its_other_case_and_its_decomposition(name: str) -> None:
    import unicodedata

    for other in (name.swapcase(), unicodedata.normalize("NFD", name),
                  unicodedata.normalize("NFC", name), name + ZWNJ):
        if other != name and "/" not in other:
            assert collisions([name, other]) == [tuple(sorted((name, other)))] or collisions(
                [name, other]) == [tuple(sorted((other, name)))]


@given(st.lists(st.text("abAB/", min_size=1, max_size=5), max_size=8))
def test_collisions_are_only_between_distinct_entries_of_one_folder(paths: list[str]) -> None:
    paths = [p for p in paths if path_problem(p) is None]  # what validation lets through
    for first, other in collisions(paths):
        assert first != other
        assert first.rpartition("/")[0] == other.rpartition("/")[0]
        assert first.lower() == other.lower()


# The plain-path shortcut of path_problem must give the full rules' answers.
_INTERESTING = "aAzZ09_-.~/ \\:$\u200c\ufeffgitmodulesconauxnulprncomlpt1\u0131\u212a"


@given(st.text(_INTERESTING, max_size=24))
def test_the_plain_path_shortcut_agrees_with_the_full_rules(path: str) -> None:
    from librarian.core.gitpaths import _path_problem, _segment_problem

    assert (path_problem(path) is None) == (_path_problem(path) is None)
    if "/" not in path:
        assert (segment_problem(path) is None) == (_segment_problem(path) is None)


@pytest.mark.parametrize("path", [
    "con", "CON.txt", "skills/Lpt3.md/x", "a/aux", "nul.tar.gz", "Com9", "prn/b",
])
def test_the_plain_path_shortcut_keeps_the_reserved_device_names(path: str) -> None:
    assert path_problem(path) == "is a reserved device name on Windows"


@pytest.mark.parametrize("path", ["com0", "auxiliary", "skills/con-tools", "lpt", "a.con"])
def test_names_that_only_start_like_a_device_are_plain(path: str) -> None:
    assert path_problem(path) is None


@given(st.lists(st.text(_INTERESTING + "\n", max_size=12), max_size=6))
def test_judging_many_paths_at_once_finds_the_first_refused(paths: list[str]) -> None:
    from librarian.core.gitpaths import first_path_problem

    refused = [(p, path_problem(p)) for p in paths if path_problem(p) is not None]
    assert first_path_problem(paths) == (refused[0] if refused else None)


def test_first_path_problem_judges_every_chunk() -> None:
    """Paths are judged PLAIN_CHUNK at a time (bounded regex state); a bad one in any
    chunk, the last one included, is still found."""
    paths = [f"skills/s{i:05d}" for i in range(PLAIN_CHUNK * 2 + 3)]
    assert first_path_problem(paths) is None
    for bad_at in (0, PLAIN_CHUNK - 1, PLAIN_CHUNK, len(paths) - 1):
        broken = [*paths[:bad_at], "skills/.git", *paths[bad_at + 1:]]
        found = first_path_problem(broken)
        assert found is not None and found[0] == "skills/.git"
    assert first_path_problem([]) is None
