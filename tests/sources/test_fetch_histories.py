"""`update` from upstream histories shaped like real collections (merges, reverts, renames,
a tree that reappears), over each transport, judged by plain git: after every update
`git fsck --strict` is clean and the installed items are exactly the upstream tip's. The
first fetch asks for the tip only; a fetch that fails leaves the library byte-identical,
objects included."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.helpers import GIT, assert_git_consistent, git, git_text, run_main, skill_md
from support.sources_helpers import git_daemon, http_server

Cap = pytest.CaptureFixture[str]
pytestmark = pytest.mark.skipif(GIT is None, reason="the git binary is not installed")


class History:
    """A non-bare upstream repository changed with the git binary, as maintainers do."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True)
        git(path, "init", "-q", "-b", "main")

    def skill(self, rel: str, body: str = "Do it.\n", **extra: bytes) -> History:
        name = rel.rsplit("/", 1)[-1]
        self.put(f"{rel}/SKILL.md", skill_md(name, body=body))
        for file, data in extra.items():
            self.put(f"{rel}/{file}", data)
        return self

    def put(self, rel: str, data: bytes) -> History:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return self

    def git(self, *args: str) -> str:
        return git_text(self.path, *args)

    def commit(self, message: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()

    def items(self) -> dict[str, str]:
        """Upstream item path -> git tree id at main's tip."""
        found = {}
        for line in self.git("ls-tree", "-r", "-t", "main").splitlines():
            meta, path = line.split("\t", 1)
            if path.endswith("/SKILL.md"):
                found[path.rsplit("/", 1)[0]] = ""
        for path in found:
            found[path] = self.git("rev-parse", f"main:{path}").strip()
        return found


def lib(capsys: Cap, library: Path, *args: str):  # type: ignore[no-untyped-def]
    return run_main(capsys, "--library", str(library), *args)


def installed(library: Path, source: str = "team") -> dict[str, str]:
    prefix = f"sources/{source}/"
    found = {}
    for line in git_text(library, "ls-tree", "-r", "HEAD").splitlines():
        path = line.split("\t", 1)[1]
        if path.startswith(prefix) and path.endswith("/SKILL.md"):
            item = path[len(prefix):].rsplit("/", 1)[0]
            found[item] = git_text(library, "rev-parse", f"HEAD:{prefix}{item}").strip()
    return found


@pytest.fixture(params=["local", "file", "git-daemon", "http"])
def transport(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[History, str]]:
    history = History(tmp_path / "srv" / "team")
    history.skill("skills/pdf", notes=b"one\n").skill("skills/docx")
    history.commit("first")
    kind = request.param
    if kind == "local":
        yield history, str(history.path)
    elif kind == "file":
        yield history, "file://" + str(history.path)
    elif kind == "git-daemon":
        with git_daemon(history.path.parent) as base:
            yield history, f"{base}/team"
    else:
        with http_server({"/team": history.path}) as base:
            yield history, f"{base}/team"


def updated(capsys: Cap, library: Path, history: History) -> None:
    result = lib(capsys, library, "update", "--json")
    assert result.code == 0, result.err
    assert_git_consistent(library)
    assert installed(library) == history.items()


def test_merges_reverts_renames_and_reappearing_trees(
    library: Path, transport: tuple[History, str], capsys: Cap
) -> None:
    history, url = transport
    assert lib(capsys, library, "source", "add", "team", url).code == 0
    updated(capsys, library, history)
    # a change, then its revert: the tip's tree is the first commit's again
    history.put("skills/pdf/notes", b"two\n").commit("two")
    updated(capsys, library, history)
    history.git("revert", "--no-edit", "HEAD")
    updated(capsys, library, history)
    # a branch forked before the library's first fetch, merged after it
    first = history.git("rev-list", "--max-parents=0", "main").strip()
    history.git("checkout", "-q", "-b", "feature", first)
    history.skill("skills/xlsx", body="Sheets.\n").commit("feature: xlsx")
    history.git("checkout", "-q", "main")
    history.skill("skills/pptx").commit("main: pptx")
    history.git("merge", "-q", "--no-edit", "feature")
    updated(capsys, library, history)
    # a rename (folder and name), then a removal and its restoration from old history
    history.git("mv", "skills/docx", "skills/word")
    history.skill("skills/word").commit("rename docx to word")
    updated(capsys, library, history)
    history.git("rm", "-q", "-r", "skills/pdf")
    history.commit("drop pdf")
    updated(capsys, library, history)
    history.git("revert", "--no-edit", "HEAD")  # pdf's old tree reappears
    updated(capsys, library, history)
    assert set(installed(library)) == {"skills/pdf", "skills/word", "skills/xlsx",
                                       "skills/pptx"}
    clone = library.parent / "clone"
    git(library.parent, "clone", "-q", str(library), str(clone))
    assert git(clone, "fsck", "--strict", check=False).returncode == 0


def test_a_first_fetch_takes_the_tip_only_and_a_later_one_the_change(
    library: Path, transport: tuple[History, str], capsys: Cap
) -> None:
    history, url = transport
    history.put("skills/pdf/big-old.bin", bytes(range(256)) * 64).commit("an old asset")
    old_blob = history.git("rev-parse", "main:skills/pdf/big-old.bin").strip()
    history.git("rm", "-q", "skills/pdf/big-old.bin")
    for n in range(8):
        history.skill(f"skills/s{n}").commit(f"add s{n}")
    assert lib(capsys, library, "source", "add", "team", url).code == 0
    updated(capsys, library, history)
    tip = history.git("rev-parse", "main").strip()
    assert git(library, "cat-file", "-e", old_blob, check=False).returncode != 0
    assert (library / ".git" / "shallow").read_text().split() == [tip]
    packs = set((library / ".git" / "objects" / "pack").glob("*.pack"))
    history.put("skills/s3/notes", b"new\n").commit("change s3")
    updated(capsys, library, history)
    new = set((library / ".git" / "objects" / "pack").glob("*.pack")) - packs
    assert len(new) == 1
    if url.startswith("http://"):
        return  # dulwich's own server answers a shallow request with the whole tip
    listed = git_text(library, "verify-pack", "-v", str(new.pop())).splitlines()
    sent = [line for line in listed if len(line.split()) >= 5 and len(line.split()[0]) == 40]
    kinds = sorted(line.split()[1] for line in sent)
    # commit, root tree, skills/, skills/s3/, the new blob: what git fetch would send (a
    # thin pack's delta base, a tree the library has, is appended when it is completed)
    assert kinds.count("commit") == 1 and kinds.count("blob") == 1, sent
    assert 3 <= kinds.count("tree") <= 4, sent


def _store_files(library: Path) -> dict[str, bytes]:
    found = {}
    for path in sorted((library / ".git").rglob("*")):
        rel = path.relative_to(library / ".git").as_posix()
        if path.is_file() and not rel.startswith(("librarian/", "logs/")):
            found[rel] = path.read_bytes()
    return found


def test_an_incomplete_upstream_leaves_the_library_byte_identical(
    library: Path, tmp_path: Path, capsys: Cap
) -> None:
    history = History(tmp_path / "srv" / "team")
    history.skill("skills/pdf", notes=b"one\n").commit("first")
    blob = history.git("rev-parse", "main:skills/pdf/notes").strip()
    (history.path / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    assert lib(capsys, library, "source", "add", "team", str(history.path)).code == 0
    before = _store_files(library)
    work = sorted(p.name for p in library.iterdir())
    result = lib(capsys, library, "update")
    assert result.code == 2, result.err
    assert "lacks object" in result.err and blob in result.err
    assert _store_files(library) == before
    assert sorted(p.name for p in library.iterdir()) == work
    assert_git_consistent(library)


def test_a_pack_naming_objects_the_library_lacks_is_removed(
    library: Path, tmp_path: Path, capsys: Cap
) -> None:
    """The library holds the previous commit but not its tree (an older librarian's
    interrupted fetch): the server leaves out what that commit holds, so the pack that
    arrived names objects the library lacks; it is deleted and nothing else changes. From
    a repository on this machine the library is asked what it holds, so nothing is
    missing and the update succeeds."""
    from dulwich.repo import Repo

    history = History(tmp_path / "srv" / "team")
    history.skill("skills/pdf").commit("first")
    old = history.git("rev-parse", "main").strip()
    history.skill("skills/docx").commit("second")
    with git_daemon(history.path.parent) as base:
        assert lib(capsys, library, "source", "add", "team", f"{base}/team").code == 0
        with Repo(str(history.path)) as up, Repo(str(library)) as here:
            here.object_store.add_object(up[old.encode()])
            here.refs[b"refs/librarian/sources/team"] = old.encode()
        (library / ".git" / "shallow").write_text(old + "\n")
        before = _store_files(library)
        result = lib(capsys, library, "update")
        assert result.code == 2, result.err
        assert "without" in result.err, result.err
        assert _store_files(library) == before
    edit = lib(capsys, library, "source", "remove", "team")
    assert edit.code == 0, edit.err
    assert lib(capsys, library, "source", "add", "team", str(history.path)).code == 0
    with Repo(str(library)) as here:
        here.refs[b"refs/librarian/sources/team"] = old.encode()
    assert lib(capsys, library, "update").code == 0  # (fsck: the planted commit is broken)
    assert installed(library) == history.items()
