"""A hostile upstream: an annotated tag whose ``type`` header lies about its object (``type
commit`` naming a tree). Fetched by path or ``file://``, as a branch-followed tag or as a
signed source's ``librarian-release/N``, it is refused, and nothing of the refused fetch
stays in the library's object store: ``git count-objects -v``, the object listing and
``git fsck --strict`` show none of it, without ``git gc``."""

from __future__ import annotations

from pathlib import Path

import pytest
from dulwich.objects import Blob, Tree
from dulwich.repo import Repo
from support.helpers import assert_one_error_line, cli, git, git_text, head, requires_git
from support.trust_helpers import Publisher

from librarian.trust.keys import generate_key
from librarian.trust.tag import signed_tag

Cap = pytest.CaptureFixture[str]
TAGGER = b"Publisher <pub@example.org> 1764579600 +0000"

pytestmark = requires_git


def _lying_tag(up: Publisher, ref_name: str, *, key=None) -> tuple[str, set[str]]:  # type: ignore[no-untyped-def]
    """Put a tag ``refs/tags/<ref_name>`` saying ``type commit`` but naming a fresh tree
    (holding a fresh blob); the ids of the objects only this tag brings."""
    with Repo(str(up.path)) as repo:
        blob = Blob.from_string(b"planted by a lying tag\n")
        tree = Tree()
        tree.add(b"planted.md", 0o100644, blob.id)
        repo.object_store.add_object(blob)
        repo.object_store.add_object(tree)
    body = b"statement\n"
    raw = signed_tag(tree.id.decode(), ref_name, TAGGER, body, key) if key is not None else (
        b"object " + tree.id + b"\ntype commit\ntag " + ref_name.encode() + b"\ntagger "
        + TAGGER + b"\n\n" + body)
    tag = up.put_tag(ref_name, raw)
    return tag, {tag, tree.id.decode(), blob.id.decode()}


def _objects(library: Path) -> set[str]:
    listed = git_text(library, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    return set(listed.split())


def _count(library: Path) -> str:
    return git_text(library, "count-objects", "-v")


@pytest.fixture
def up(tmp_path: Path) -> Publisher:
    publisher = Publisher(tmp_path / "up.git")
    publisher.skill("skills/pdf").commit("first")
    return publisher


@pytest.mark.parametrize("scheme", ["path", "file"])
def test_a_tag_lying_about_its_type_is_refused_and_leaves_nothing(
    library: Path, up: Publisher, capsys: Cap, scheme: str
) -> None:
    _, planted = _lying_tag(up, "v1")
    url = up.url if scheme == "path" else "file://" + up.url
    assert cli(capsys, library, "source", "add", "team", url, "--ref", "v1").code == 0
    old, before, count = head(library), _objects(library), _count(library)
    for command in ("update", "outdated"):
        result = cli(capsys, library, command)
        assert result.code == 2, (command, result.out, result.err)
        line = assert_one_error_line(result.err)
        assert "source team" in line and "fsck badTagObject" in line, line
        assert "says commit" in line and "is a tree" in line, line
        assert _objects(library) == before and not planted & _objects(library)
        assert _count(library) == count
        assert head(library) == old
    fsck = git(library, "fsck", "--strict", check=False)
    assert fsck.returncode == 0, fsck.stdout.decode() + fsck.stderr.decode()


def test_a_release_tag_lying_about_its_type_is_refused_and_leaves_nothing(
    library: Path, up: Publisher, tmp_path: Path, capsys: Cap
) -> None:
    (tmp_path / "keys").mkdir()
    key = generate_key(tmp_path / "keys" / "k", comment="pub@example.org")
    up.release(key, 1)
    assert cli(capsys, library, "source", "add", "team", "file://" + up.url,
               "--trust", key.public.line()).code == 0
    assert cli(capsys, library, "update").code == 0
    _, planted = _lying_tag(up, "librarian-release/2", key=key)
    old, before, count = head(library), _objects(library), _count(library)
    for command in ("update", "outdated"):
        result = cli(capsys, library, command)
        assert result.code in (2, 4), (command, result.out, result.err)
        line = assert_one_error_line(result.err)
        assert "source team" in line and "fsck badTagObject" in line, line
        assert "says commit" in line and "is a tree" in line, line
        assert not planted & _objects(library)
        assert _objects(library) == before and _count(library) == count
        assert head(library) == old
    fsck = git(library, "fsck", "--strict", check=False)
    assert fsck.returncode == 0, fsck.stdout.decode() + fsck.stderr.decode()
