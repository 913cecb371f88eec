"""The per-file three-way merge of an item (spec §6.3): git's semantics, never a marker."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers import requires_git

from librarian.git.merge import (
    FileVersion,
    ItemMerge,
    describe_hunk,
    is_binary,
    merge_files,
    merge_lines,
    split_lines,
)

F, X = 0o100644, 0o100755
MARKERS = (b"<<<<<<<", b"=======", b">>>>>>>")


def fv(text: str | bytes, mode: int = F) -> FileVersion:
    return FileVersion(mode, text.encode() if isinstance(text, str) else text)


def skill(*body: str) -> FileVersion:
    return fv("---\nname: pdf\ndescription: PDFs\n---\n" + "".join(b + "\n" for b in body))


BODY = [f"step {n}" for n in range(1, 11)]

# -- random items ---------------------------------------------------------------------------

# A fixed set of paths (none a directory of another), lines from a small alphabet so that
# random edits collide often, and now and then a binary file.
_PATHS = ("SKILL.md", "notes.txt", "scripts/run.sh", "scripts/lib/x.py")
_line = st.sampled_from(["a", "b", "c", "d", "e", "", "  x"]).map(lambda s: s + "\n")
_text = st.lists(_line, max_size=8).map(lambda ls: "".join(ls).encode())
_data = st.one_of(_text, _text.map(lambda t: b"\0" + t), st.binary(max_size=12))
_version = st.builds(FileVersion, st.sampled_from([F, X]), _data)
items = st.dictionaries(st.sampled_from(_PATHS), _version, max_size=4)


def _edit(draw: st.DrawFn, base: dict[str, FileVersion]) -> dict[str, FileVersion]:
    """A random edit of ``base``: files changed (a line replaced, inserted or the mode
    flipped), removed or added."""
    out = dict(base)
    for path in _PATHS:
        choice = draw(st.sampled_from(["keep", "keep", "line", "insert", "mode", "drop", "new"]))
        current = out.get(path)
        if choice == "drop":
            out.pop(path, None)
        elif choice == "new" or current is None:
            if choice != "keep":
                out[path] = draw(_version)
        elif choice == "mode":
            out[path] = FileVersion(X if current.mode == F else F, current.data)
        elif choice in ("line", "insert"):
            lines = split_lines(current.data)
            at = draw(st.integers(0, len(lines)))
            new = draw(_line).encode()
            lines[at:at + (choice == "line")] = [new]
            out[path] = FileVersion(current.mode, b"".join(lines))
    return out


@st.composite
def triples(draw: st.DrawFn) -> tuple[dict[str, FileVersion], ...]:
    base = draw(items)
    return base, _edit(draw, base), _edit(draw, base)


def _marker_free(files: dict[str, FileVersion]) -> bool:
    return not any(m in v.data for v in files.values() for m in MARKERS)


# -- properties -----------------------------------------------------------------------------


@settings(max_examples=300, deadline=None, database=None)
@given(triples())
def test_one_sided_changes_are_taken(t: tuple[dict[str, FileVersion], ...]) -> None:
    base, x, _ = t
    assert merge_files(base, x, base) == ItemMerge(x, ())
    assert merge_files(base, base, x) == ItemMerge(x, ())
    assert merge_files(base, x, x) == ItemMerge(x, ())  # the same change on both sides


@settings(max_examples=400, deadline=None, database=None)
@given(triples())
def test_merge_is_symmetric_and_writes_no_marker(t: tuple[dict[str, FileVersion], ...]) -> None:
    base, ours, theirs = t
    one, other = merge_files(base, ours, theirs), merge_files(base, theirs, ours)
    assert one.clean == other.clean
    assert [c.path for c in one.conflicts] == [c.path for c in other.conflicts]
    if one.clean:
        assert one.files == other.files
        assert one.files is not None
        assert set(one.files) <= set(base) | set(ours) | set(theirs)
        for path, merged in one.files.items():
            # every merged line comes from one of the three versions: nothing invented
            sides = [s[path].data for s in (base, ours, theirs) if path in s]
            known = {line for data in sides for line in split_lines(data)}
            assert set(split_lines(merged.data)) <= known
            if is_binary(merged.data):
                assert merged.data in sides  # a binary is taken whole, never spliced
        if _marker_free(base) and _marker_free(ours) and _marker_free(theirs):
            assert _marker_free(dict(one.files))
    else:
        assert one.files is None


@settings(max_examples=150, deadline=None, database=None)
@given(st.integers(0, 9), st.integers(0, 9), st.text("xyz", min_size=1, max_size=3),
       st.text("xyz", min_size=1, max_size=3))
def test_edits_two_lines_apart_merge(i: int, j: int, a: str, b: str) -> None:
    """Different lines with an unchanged line between them merge, as in git."""
    base = BODY
    ours, theirs = list(base), list(base)
    ours[i], theirs[j] = f"ours {a}", f"theirs {b}"
    result = merge_files({"SKILL.md": skill(*base)}, {"SKILL.md": skill(*ours)},
                         {"SKILL.md": skill(*theirs)})
    if abs(i - j) >= 2:
        assert result.files is not None
        want = list(base)
        want[i], want[j] = ours[i], theirs[j]
        assert result.files["SKILL.md"] == skill(*want)
    elif i == j:
        assert [c.kind for c in result.conflicts] == ["content"]


# -- the cases a merge must decide -----------------------------------------------------------


def test_different_parts_of_skill_md_merge() -> None:
    base = {"SKILL.md": skill(*BODY)}
    ours = {"SKILL.md": skill("intro by me", *BODY)}
    theirs = {"SKILL.md": skill(*BODY[:-1], "step 10, revised upstream")}
    result = merge_files(base, ours, theirs)
    assert result.files == {"SKILL.md": skill("intro by me", *BODY[:-1],
                                              "step 10, revised upstream")}


def test_different_files_of_one_item_merge() -> None:
    base = {"SKILL.md": skill(*BODY), "ref.md": fv("ref\n")}
    ours = {"SKILL.md": skill(*BODY, "my note"), "ref.md": fv("ref\n"), "mine.md": fv("m\n")}
    theirs = {"SKILL.md": skill(*BODY), "ref.md": fv("ref v2\n"), "new.md": fv("n\n")}
    result = merge_files(base, ours, theirs)
    assert result.files == {"SKILL.md": skill(*BODY, "my note"), "ref.md": fv("ref v2\n"),
                            "mine.md": fv("m\n"), "new.md": fv("n\n")}


def test_overlapping_edits_conflict_with_their_hunks() -> None:
    base = {"SKILL.md": skill(*BODY)}
    ours = {"SKILL.md": skill(*BODY[:4], "step 5 my way", *BODY[5:])}
    theirs = {"SKILL.md": skill(*BODY[:4], "step 5 upstream's way", *BODY[5:])}
    result = merge_files(base, ours, theirs)
    assert result.files is None
    (conflict,) = result.conflicts
    assert (conflict.path, conflict.kind) == ("SKILL.md", "content")
    (hunk,) = conflict.hunks
    assert (hunk.ours_line, hunk.ours, hunk.theirs) == (9, b"step 5 my way\n",
                                                        b"step 5 upstream's way\n")
    assert hunk.base == b"step 5\n"
    assert describe_hunk(hunk) == ("line 9 locally 'step 5 my way' vs line 9 upstream "
                                   "\"step 5 upstream's way\"")


def test_deletions() -> None:
    base = {"SKILL.md": skill(), "old.md": fv("old\n"), "gone.md": fv("gone\n")}
    # removed upstream, unchanged locally: removed; removed on both sides: removed
    assert merge_files(base, {"SKILL.md": skill(), "old.md": fv("old\n")},
                       {"SKILL.md": skill(), "gone.md": fv("gone\n")}).files == {
        "SKILL.md": skill()}
    # removed upstream, edited locally: a conflict (and the other way round)
    edited = {**base, "old.md": fv("old, edited\n")}
    removed = {"SKILL.md": skill(), "gone.md": fv("gone\n")}
    assert [(c.path, c.kind) for c in merge_files(base, edited, removed).conflicts] == [
        ("old.md", "edited-removed")]
    assert [(c.path, c.kind) for c in merge_files(base, removed, edited).conflicts] == [
        ("old.md", "removed-edited")]


def test_modes_follow_git() -> None:
    base = {"run.sh": fv("echo 1\n")}
    # a one-sided exec-bit change is taken (dulwich's tree merge would call it a conflict)
    assert merge_files(base, base, {"run.sh": fv("echo 1\n", X)}).files == {
        "run.sh": fv("echo 1\n", X)}
    # one side flips the bit, the other edits the content: both are kept
    assert merge_files(base, {"run.sh": fv("echo 1\n", X)}, {"run.sh": fv("echo 2\n")}
                       ).files == {"run.sh": fv("echo 2\n", X)}
    # the bit set on both sides: the same change, clean
    assert merge_files(base, {"run.sh": fv("echo 1\n", X)}, {"run.sh": fv("echo 1\n", X)}
                       ).clean
    # added on both sides with the same content but a different bit: a mode conflict
    result = merge_files({}, {"run.sh": fv("echo\n", X)}, {"run.sh": fv("echo\n")})
    assert [(c.path, c.kind) for c in result.conflicts] == [("run.sh", "mode")]
    # a bit changed differently on both sides (only possible with other modes): conflict
    odd = {"run.sh": FileVersion(0o100664, b"echo 1\n")}
    assert [c.kind for c in merge_files(odd, {"run.sh": fv("echo 1\n", X)},
                                        {"run.sh": fv("echo 1\n")}).conflicts] == ["mode"]


def test_binary_files_are_never_line_merged() -> None:
    base = {"logo.png": fv(b"\x89PNG\0\0a\nb\nc\n")}
    ours = {"logo.png": fv(b"\x89PNG\0\0A\nb\nc\n")}
    theirs = {"logo.png": fv(b"\x89PNG\0\0a\nb\nC\n")}
    result = merge_files(base, ours, theirs)
    assert [(c.path, c.kind) for c in result.conflicts] == [("logo.png", "binary")]
    assert merge_files(base, ours, ours).files == ours  # the same change: clean
    assert merge_files(base, base, theirs).files == theirs  # one side: taken whole
    # a NUL after the first 8000 bytes is text to git, and to us
    assert not is_binary(b"x" * 8000 + b"\0") and is_binary(b"x" * 7999 + b"\0")


def test_markers_in_content_are_not_conflicts() -> None:
    """dulwich's merge_blobs searches its output for '<<<<<<< ours'; a skill documenting
    conflict markers would conflict falsely there."""
    base = {"SKILL.md": fv("title\n<<<<<<< ours\nexplained\nend\n")}
    ours = {"SKILL.md": fv("TITLE\n<<<<<<< ours\nexplained\nend\n")}
    theirs = {"SKILL.md": fv("title\n<<<<<<< ours\nexplained\nEND\n")}
    assert merge_files(base, ours, theirs).files == {
        "SKILL.md": fv("TITLE\n<<<<<<< ours\nexplained\nEND\n")}


def test_added_on_both_sides() -> None:
    assert merge_files({}, {"a.md": fv("x\n")}, {"a.md": fv("x\n")}).files == {
        "a.md": fv("x\n")}
    result = merge_files({}, {"a.md": fv("x\n")}, {"a.md": fv("y\n")})
    assert [c.kind for c in result.conflicts] == ["added-both"]
    assert result.conflicts[0].hunks[0].ours == b"x\n"


def test_file_against_directory_conflicts() -> None:
    result = merge_files({}, {"docs": fv("a file\n")}, {"docs/a.md": fv("in a dir\n")})
    assert [(c.path, c.kind) for c in result.conflicts] == [("docs", "file-directory")]


def test_lines_end_at_newline_only() -> None:
    assert split_lines(b"a\r\nb\rc\nd") == [b"a\r\n", b"b\rc\n", b"d"]
    assert split_lines(b"") == []
    merged, hunks = merge_lines(b"a\nb\nc", b"A\nb\nc", b"a\nb\nc\n")
    assert (merged, hunks) == (b"A\nb\nc\n", ())


# -- git as the judge -----------------------------------------------------------------------

_op = st.tuples(st.sampled_from(["replace", "insert", "delete"]), st.integers(0, 12),
                st.booleans())


@st.composite
def text_triples(draw: st.DrawFn) -> tuple[bytes, bytes, bytes]:
    """A text of distinct lines and two edits of it (lines replaced, inserted, deleted; a
    new line is either the side's own or one both sides may add)."""
    base = [f"line {n}" for n in range(draw(st.integers(0, 12)))]

    def edit(tag: str) -> list[str]:
        lines = list(base)
        for k, (op, at, shared) in enumerate(draw(st.lists(_op, max_size=3))):
            new, at = ("shared" if shared else f"{tag} {k}"), min(at, len(lines))
            if op == "insert":
                lines.insert(at, new)
            elif lines:
                lines[min(at, len(lines) - 1):min(at, len(lines) - 1) + 1] = (
                    [new] if op == "replace" else [])
        return lines

    ours, theirs = edit("ours"), edit("theirs")
    return tuple("".join(x + "\n" for x in side).encode()  # type: ignore[return-value]
                 for side in (base, ours, theirs))


@requires_git
@settings(max_examples=150, deadline=None, database=None)
@given(text_triples())
def test_text_merges_agree_with_git_merge_file(
    tmp_path_factory: pytest.TempPathFactory, texts: tuple[bytes, bytes, bytes]
) -> None:
    """On texts whose lines are distinct (prose, code) we merge exactly when `git
    merge-file` does, to the same bytes. (With many repeated lines the two line matchers
    may align differently; docs/decisions.md has the measurement.)"""
    z, a, b = texts
    work = tmp_path_factory.mktemp("mf")
    for name, data in (("z", z), ("a", a), ("b", b)):
        (work / name).write_bytes(data)
    git = subprocess.run(["git", "merge-file", "-p", "a", "z", "b"], cwd=work,
                         capture_output=True, check=False)
    merged, hunks = merge_lines(z, a, b)
    assert (git.returncode == 0) == (not hunks), (texts, git.stdout)
    if not hunks:
        assert merged == git.stdout
