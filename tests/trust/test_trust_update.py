"""Signed sources end to end: `update`/`outdated` install only the newest release tag that
verifies, and refuse (exit 4) every attack of spec §7 with nothing changed — HEAD, the
work tree, the lock, every ref (the fetched ones put back); `verify` re-checks offline;
`source list` and the plan say who signed; a key rotation."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from support.helpers import assert_one_error_line, cli, head
from support.sources_helpers import edit_source
from support.trust_helpers import Publisher, everything, library_refs

from librarian.formats.config import load_lock
from librarian.trust.keys import SigningKey, generate_key
from librarian.trust.tag import tag_payload

Cap = pytest.CaptureFixture[str]



@pytest.fixture
def key(tmp_path: Path) -> SigningKey:
    (tmp_path / "keys").mkdir()
    return generate_key(tmp_path / "keys" / "release", comment="publisher@example.org")


@pytest.fixture
def publisher(tmp_path: Path, key: SigningKey) -> Publisher:
    up = Publisher(tmp_path / "up.git")
    up.skill("skills/pdf").recipe("recipes/review")
    up.commit("first")
    up.release(key, 1)
    return up


@pytest.fixture
def subscribed(library: Path, publisher: Publisher, tmp_path: Path, capsys: Cap) -> Path:
    """The library follows the publisher with its key, and has installed release 1."""
    added = cli(capsys, library, "source", "add", "team", publisher.url,
                "--trust", str(tmp_path / "keys" / "release.pub"))
    assert added.code == 0, added.err
    updated = cli(capsys, library, "update")
    assert updated.code == 0, updated.err
    return library


def lock(library: Path):  # type: ignore[no-untyped-def]
    return load_lock((library / "librarian.lock").read_bytes())["team"]


def refused(capsys: Cap, library: Path, *expected: str) -> None:
    """`update` and `outdated` both exit 4 with one error line naming ``expected``, and
    nothing at all changed."""
    before = everything(library)
    for command in ("update", "outdated", "update --force"):
        result = cli(capsys, library, *command.split())
        assert result.code == 4, (command, result.out, result.err)
        line = assert_one_error_line(result.err)
        for text in expected:
            assert text in line, (text, line)
        assert "nothing was changed" in line
        assert everything(library) == before, command


def test_a_signed_release_installs_and_is_recorded(
    subscribed: Path, publisher: Publisher, key: SigningKey, capsys: Cap
) -> None:
    pinned = lock(subscribed)
    tag = library_refs(subscribed)[b"refs/librarian/releases/team"].decode()
    assert pinned.release == 1 and pinned.release_tag == tag
    assert pinned.commit == publisher.commits[-1]
    assert pinned.items == publisher.item_digests()
    text = (subscribed / "librarian.lock").read_text()
    assert "release: 1\n" in text and f"release-tag: {tag}\n" in text
    listed = cli(capsys, subscribed, "source", "list")
    assert f"signed by {key.public.fingerprint}, release 1" in listed.out
    assert cli(capsys, subscribed, "source", "list", "--json").json["sources"][0]["keys"] == [
        key.public.fingerprint]
    # commits after the release are not installed: only the next release is
    publisher.skill("skills/pdf", body="Unreleased.\n").commit("work in progress")
    plan = cli(capsys, subscribed, "outdated")
    assert plan.code == 0 and "already up to date" in plan.out
    assert f"signed: librarian-release/1 by {key.public.fingerprint}, verified" in plan.out
    publisher.release(key, 2)
    result = cli(capsys, subscribed, "update", "--json")
    assert result.code == 0, result.err
    assert result.json["releases"][0]["version"] == 2
    assert lock(subscribed).release == 2
    assert (subscribed / "sources/team/skills/pdf/SKILL.md").read_text().endswith(
        "Unreleased.\n")
    verified = cli(capsys, subscribed, "verify")
    assert verified.code == 0 and "team: release 2 verified" in verified.out


def test_an_unsigned_source_says_so_in_its_plan(
    library: Path, publisher: Publisher, capsys: Cap
) -> None:
    assert cli(capsys, library, "source", "add", "plain", publisher.url).code == 0
    result = cli(capsys, library, "update")
    assert result.code == 0 and "unsigned: no trust: keys" in result.out
    assert "; unsigned" in cli(capsys, library, "source", "list").out
    assert load_lock((library / "librarian.lock").read_bytes())["plain"].release is None


def test_an_unsigned_tag_is_refused(subscribed: Path, publisher: Publisher, capsys: Cap) -> None:
    publisher.skill("skills/pdf", body="Evil.\n").commit("evil")
    publisher.release(None, 2)
    refused(capsys, subscribed, "librarian-release/2", "the tag is not signed")


def test_a_tag_signed_by_an_untrusted_key_is_refused(
    subscribed: Path, publisher: Publisher, tmp_path: Path, capsys: Cap
) -> None:
    stranger = generate_key(tmp_path / "stranger")
    publisher.skill("skills/pdf", body="Evil.\n").commit("evil")
    publisher.release(stranger, 2)
    refused(capsys, subscribed, f"signed by {stranger.public.fingerprint}",
            "not a trusted key of this source")


def test_a_signature_that_does_not_cover_this_tag_is_refused(
    subscribed: Path, publisher: Publisher, key: SigningKey, capsys: Cap
) -> None:
    publisher.skill("skills/pdf", body="Two.\n").commit("two")
    # an honest tag signed as release 2, offered under the name of release 3
    publisher.release(key, 2, name="librarian-release/2", message=publisher.statement(3))
    publisher.put_tag("librarian-release/3", publisher.tag_bytes("librarian-release/2"))
    publisher.delete_tag("librarian-release/2")
    refused(capsys, subscribed, "librarian-release/3", "does not cover this tag")
    # the valid signature of release 1, moved onto another commit and statement
    signature = publisher.tag_bytes("librarian-release/1").split(b"-----BEGIN SSH", 1)[1]
    forged = tag_payload(publisher.commits[-1], "librarian-release/4",
                         b"Publisher <pub@example.org> 1 +0000", publisher.statement(4))
    publisher.put_tag("librarian-release/4", forged + b"-----BEGIN SSH" + signature)
    refused(capsys, subscribed, "librarian-release/4", "does not match the signed content")


def test_rollback_to_a_lower_version_is_refused(
    subscribed: Path, publisher: Publisher, key: SigningKey, capsys: Cap
) -> None:
    publisher.skill("skills/pdf", body="Two.\n").commit("two")
    publisher.release(key, 2)
    assert cli(capsys, subscribed, "update").code == 0
    publisher.delete_tag("librarian-release/2")  # a mirror that serves the old release only
    refused(capsys, subscribed, "librarian-release/1", "older than the installed 2 (rollback)")


def test_the_same_version_for_another_commit_is_refused(
    subscribed: Path, publisher: Publisher, key: SigningKey, capsys: Cap
) -> None:
    publisher.skill("skills/pdf", body="Other.\n").commit("other")
    publisher.release(key, 1)  # release 1 re-made on another commit
    refused(capsys, subscribed, "version 1 again", "not the installed")


def test_an_expired_release_is_refused(
    subscribed: Path, publisher: Publisher, key: SigningKey, capsys: Cap
) -> None:
    publisher.skill("skills/pdf", body="Two.\n").commit("two")
    publisher.release(key, 2, now=datetime.now(timezone.utc) - timedelta(days=3),
                      expires_days=2)
    refused(capsys, subscribed, "librarian-release/2", "expired on", "(freeze")


def test_a_tag_whose_commit_is_not_the_released_one_is_refused(
    subscribed: Path, publisher: Publisher, key: SigningKey, capsys: Cap
) -> None:
    released = publisher.commits[-1]
    publisher.skill("skills/pdf", body="Evil.\n").commit("evil")
    # signed, but the statement speaks of the released commit while the tag names another
    publisher.release(key, 2, message=publisher.statement(2, commit=released))
    refused(capsys, subscribed, "the statement is for commit", "not the released one")


def test_content_that_does_not_match_its_signed_digest_is_refused(
    subscribed: Path, publisher: Publisher, key: SigningKey, capsys: Cap
) -> None:
    honest = publisher.item_digests()
    publisher.skill("skills/pdf", body="Evil.\n").commit("evil")
    publisher.release(key, 2, items=honest)  # the digests of the old, reviewed content
    refused(capsys, subscribed, "the content of skills/pdf", "(tampering)")


def test_an_item_missing_from_the_statement_is_refused(
    subscribed: Path, publisher: Publisher, key: SigningKey, capsys: Cap
) -> None:
    stated = publisher.item_digests()
    publisher.skill("skills/extra", body="Slipped in.\n").commit("mix")
    publisher.release(key, 2, items=stated)  # an old statement, a tree with one more item
    refused(capsys, subscribed, "skills/extra is in the tree but not in the signed statement",
            "(mix-and-match)")
    # an item filtered out by include: still in the tree, still refused
    edit_source(subscribed, "team", include=("skills/pdf",))
    refused(capsys, subscribed, "skills/extra is in the tree")


def test_verify_rechecks_offline_and_names_what_differs(
    subscribed: Path, publisher: Publisher, capsys: Cap
) -> None:
    import shutil

    ok = cli(capsys, subscribed, "verify", "team", "--json")
    assert ok.code == 0 and ok.json["sources"][0]["release"] == 1
    shutil.rmtree(publisher.path)  # offline: the upstream is gone
    assert cli(capsys, subscribed, "verify").code == 0
    # a change committed into the managed collection with plain git
    from dulwich import porcelain

    target = subscribed / "sources/team/skills/pdf/SKILL.md"
    target.write_text(target.read_text() + "Tampered.\n")
    porcelain.add(str(subscribed), paths=[str(target)])
    porcelain.commit(str(subscribed), message="hand edit", author=b"U <u@example.org>",
                     committer=b"U <u@example.org>")
    result = cli(capsys, subscribed, "verify")
    assert result.code == 4
    line = assert_one_error_line(result.err)
    assert "does not match its signed release librarian-release/1" in line
    assert "skills/pdf: committed content" in line


def test_verify_refuses_a_lock_that_lies_about_its_release(
    subscribed: Path, capsys: Cap
) -> None:
    path = subscribed / "librarian.lock"
    path.write_text(path.read_text().replace("release: 1", "release: 2"))
    from dulwich import porcelain

    porcelain.add(str(subscribed), paths=[str(path)])
    porcelain.commit(str(subscribed), message="lie", author=b"U <u@example.org>",
                     committer=b"U <u@example.org>")
    result = cli(capsys, subscribed, "verify")
    assert result.code == 4 and "does not cover this tag" in assert_one_error_line(result.err)
    tag = lock(subscribed).release_tag
    for lie in ("f" * 40, "not-an-id"):
        path.write_text(path.read_text().replace(tag, lie))
        porcelain.add(str(subscribed), paths=[str(path)])
        porcelain.commit(str(subscribed), message="lie", author=b"U <u@example.org>",
                         committer=b"U <u@example.org>")
        result = cli(capsys, subscribed, "verify")
        assert result.code == 4 and "is not in the object store" in result.err, result.err
        tag = lie


def test_key_rotation_add_the_new_key_then_remove_the_old(
    subscribed: Path, publisher: Publisher, key: SigningKey, tmp_path: Path, capsys: Cap
) -> None:
    new = generate_key(tmp_path / "keys" / "release-2026")
    publisher.skill("skills/pdf", body="Two.\n").commit("two")
    publisher.release(new, 2)
    # subscribers who have not added the new key are told, and nothing changes
    refused(capsys, subscribed, f"signed by {new.public.fingerprint}",
            "add it to the source's trust:")
    # step 1: trust both keys
    edit_source(subscribed, "team", trust=(key.public.line(), new.public.line()))
    assert cli(capsys, subscribed, "update").code == 0 and lock(subscribed).release == 2
    # step 2: drop the old key; the installed release still verifies, and a release the
    # old key signs from now on is refused
    edit_source(subscribed, "team", trust=(new.public.line(),))
    assert cli(capsys, subscribed, "verify").code == 0
    publisher.skill("skills/pdf", body="Three.\n").commit("three")
    publisher.release(key, 3)
    refused(capsys, subscribed, f"signed by {key.public.fingerprint}")


def test_trust_added_to_an_unsigned_source_needs_a_release(
    library: Path, publisher: Publisher, key: SigningKey, capsys: Cap
) -> None:
    assert cli(capsys, library, "source", "add", "team", publisher.url).code == 0
    assert cli(capsys, library, "update").code == 0
    edit_source(library, "team", trust=(key.public.line(),))
    result = cli(capsys, library, "verify")
    assert result.code == 4 and "installed without a signed release" in result.err
    old = head(library)
    assert cli(capsys, library, "update").code == 0  # release 1 is this very commit
    assert lock(library).release == 1 and head(library) != old
    assert cli(capsys, library, "verify").code == 0


def test_source_remove_drops_the_release_ref(subscribed: Path, capsys: Cap) -> None:
    assert b"refs/librarian/releases/team" in library_refs(subscribed)
    assert cli(capsys, subscribed, "source", "remove", "team").code == 0
    assert not any(r.startswith(b"refs/librarian/") for r in library_refs(subscribed))


@pytest.mark.parametrize("transport", ["file", "git-daemon", "http"])
def test_signed_releases_over_real_transports(
    library: Path, tmp_path: Path, key: SigningKey, capsys: Cap, transport: str
) -> None:
    """The release tags are listed and fetched over git://, http:// and file:// as well as
    from a local path; a forged release is refused the same way over the wire."""
    from support.helpers import GIT
    from support.sources_helpers import git_daemon, http_server

    served = Publisher(tmp_path / "srv" / "team.git")
    served.skill("skills/pdf").commit("first")
    served.release(key, 1)
    if transport == "git-daemon" and GIT is None:
        pytest.skip("the git binary is not installed")

    def run(url: str) -> None:
        added = cli(capsys, library, "source", "add", "team", url, "--trust", key.public.line())
        assert added.code == 0, added.err
        first = cli(capsys, library, "update")
        assert first.code == 0, first.err
        assert lock(library).release == 1
        served.skill("skills/pdf", body="Two.\n").commit("two")
        served.release(generate_key(tmp_path / "stranger"), 2)
        refused(capsys, library, "not a trusted key of this source")
        served.release(key, 2)  # the honest release 2 replaces the forged tag
        second = cli(capsys, library, "update")
        assert second.code == 0, second.err
        assert lock(library).release == 2
        assert cli(capsys, library, "verify").code == 0

    if transport == "file":
        run("file://" + served.url)
    elif transport == "git-daemon":
        with git_daemon(served.path.parent) as base:
            run(f"{base}/team.git")
    else:
        with http_server({"/team.git": served.path}) as base:
            run(f"{base}/team.git")


def test_a_first_update_refused_leaves_no_ref_behind(
    library: Path, tmp_path: Path, key: SigningKey, capsys: Cap
) -> None:
    up = Publisher(tmp_path / "forged.git")
    up.skill("skills/pdf").commit("first")
    up.release(generate_key(tmp_path / "stranger"), 1)
    assert cli(capsys, library, "source", "add", "team", up.url, "--trust",
               key.public.line()).code == 0
    refused(capsys, library, "not a trusted key of this source")
    assert not any(r.startswith(b"refs/librarian/") for r in library_refs(library))
    assert not (library / "sources").exists() or not any((library / "sources").iterdir())
