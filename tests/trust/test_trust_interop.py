"""The trust package against the real tools: ssh-keygen reads librarian's keys and
signatures and librarian reads ssh-keygen's; git verifies librarian's release tags and
librarian verifies tags made by ``git tag -s`` (skipped when either binary is missing)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from support.helpers import git, git_text
from support.trust_helpers import allowed_signers, keygen, requires_ssh_keygen, ssh_keygen_key

from librarian.errors import ConflictError, TrustError, UsageError
from librarian.trust.keys import generate_key, load_signing_key, read_public_key
from librarian.trust.policy import verify_release
from librarian.trust.sshsig import sign, verify
from librarian.trust.statement import dump_statement, new_statement
from librarian.trust.tag import signed_tag

DIGEST = "sha256:" + "ab" * 32

@requires_ssh_keygen
def test_generated_key_is_an_openssh_key_with_the_same_fingerprint(tmp_path: Path) -> None:
    key = generate_key(tmp_path / "release", comment="publisher@example.org")
    assert (tmp_path / "release").stat().st_mode & 0o777 == 0o600
    pub_line = (tmp_path / "release.pub").read_text().strip()
    assert pub_line == key.public.line()
    assert pub_line.endswith(" publisher@example.org")
    # ssh-keygen derives the same public key from librarian's private key file ...
    derived = keygen("-y", "-f", str(tmp_path / "release")).stdout.decode().split()
    assert derived[:2] == pub_line.split()[:2]
    # ... and prints the fingerprint librarian computes.
    listed = keygen("-lf", str(tmp_path / "release.pub")).stdout.decode().split()
    assert listed[1] == key.public.fingerprint and listed[-1] == "(ED25519)"
    with pytest.raises(ConflictError):
        generate_key(tmp_path / "release")


@requires_ssh_keygen
def test_an_ssh_keygen_key_works_as_it_is(tmp_path: Path) -> None:
    path = ssh_keygen_key(tmp_path / "id_ed25519")
    key = load_signing_key(path)
    assert key.public.comment == "alice@example.org"
    assert key.public.line() == (tmp_path / "id_ed25519.pub").read_text().strip()
    listed = keygen("-lf", str(path)).stdout.decode().split()
    assert listed[1] == key.public.fingerprint
    assert read_public_key(str(tmp_path / "id_ed25519.pub")) == key.public


@requires_ssh_keygen
def test_encrypted_and_non_ed25519_keys_are_refused(tmp_path: Path) -> None:
    encrypted = ssh_keygen_key(tmp_path / "locked", passphrase="secret passphrase")
    with pytest.raises(UsageError, match="passphrase"):
        load_signing_key(encrypted)
    ecdsa = ssh_keygen_key(tmp_path / "ecdsa", kind="ecdsa")
    with pytest.raises(UsageError, match="ed25519 keys only"):
        load_signing_key(ecdsa)
    with pytest.raises(UsageError, match="ed25519 keys only"):
        read_public_key(str(tmp_path / "ecdsa.pub"))


@requires_ssh_keygen
def test_ssh_keygen_verifies_a_librarian_signature_and_the_reverse(tmp_path: Path) -> None:
    key = generate_key(tmp_path / "release", comment="alice@example.org")
    message = b"librarian-release: 1\nversion: 1\n"
    (tmp_path / "message").write_bytes(message)
    (tmp_path / "message.sig").write_bytes(sign(key, message))
    signers = allowed_signers(tmp_path / "allowed", key.public.line())
    checked = keygen("-Y", "verify", "-f", str(signers), "-I", "alice@example.org", "-n", "git",
                     "-s", str(tmp_path / "message.sig"), input=message)
    assert checked.returncode == 0, checked.stderr
    wrong = keygen("-Y", "verify", "-f", str(signers), "-I", "alice@example.org", "-n", "git",
                   "-s", str(tmp_path / "message.sig"), input=message + b"x")
    assert wrong.returncode != 0

    theirs = ssh_keygen_key(tmp_path / "id_ed25519")
    (tmp_path / "theirs").write_bytes(message)
    made = keygen("-Y", "sign", "-f", str(theirs), "-n", "git", str(tmp_path / "theirs"))
    assert made.returncode == 0, made.stderr
    armored = (tmp_path / "theirs.sig").read_bytes()
    assert verify(message, armored).same_key(read_public_key(str(theirs) + ".pub"))
    with pytest.raises(TrustError, match="does not match"):
        verify(message + b"x", armored)
    with pytest.raises(TrustError, match="namespace"):
        verify(message, armored, namespace="file")


def _repo(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "publisher"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("hello\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "first")
    return repo, git_text(repo, "rev-parse", "HEAD").strip()


def _statement(commit: str, version: int = 1) -> bytes:
    return dump_statement(new_statement(version, commit, {"skills/pdf": DIGEST}))


@requires_ssh_keygen
def test_git_tag_v_verifies_a_librarian_release_tag(tmp_path: Path) -> None:
    repo, commit = _repo(tmp_path)
    key = generate_key(tmp_path / "release", comment="alice@example.org")
    raw = signed_tag(commit, "librarian-release/1", b"Alice <alice@example.org> 1764579600 +0000",
                     _statement(commit), key)
    tag_id = git_text(repo, "hash-object", "-t", "tag", "-w", "--stdin", input=raw).strip()
    git(repo, "update-ref", "refs/tags/librarian-release/1", tag_id)
    signers = allowed_signers(tmp_path / "allowed", key.public.line())
    checked = git(repo, "-c", "gpg.format=ssh", "-c", f"gpg.ssh.allowedSignersFile={signers}",
                  "tag", "-v", "librarian-release/1", check=False)
    assert checked.returncode == 0, checked.stderr.decode()
    assert b'Good "git" signature for alice@example.org' in checked.stderr
    assert git(repo, "fsck", "--strict", check=False).returncode == 0
    # git reads back exactly the bytes librarian wrote, and librarian accepts them
    assert git(repo, "cat-file", "tag", tag_id).stdout == raw
    release = verify_release(raw, source="team", ref_name="librarian-release/1", tag_id=tag_id,
                             trusted=[key.public], fetched_commit=commit)
    assert release.version == 1 and release.commit == commit
    # a key git does not trust: git refuses it too
    other = generate_key(tmp_path / "other")
    allowed_signers(signers, other.public.line())
    refused = git(repo, "-c", "gpg.format=ssh", "-c", f"gpg.ssh.allowedSignersFile={signers}",
                  "tag", "-v", "librarian-release/1", check=False)
    assert refused.returncode != 0


@requires_ssh_keygen
def test_a_tag_signed_by_git_tag_s_is_accepted_as_a_release(tmp_path: Path) -> None:
    repo, commit = _repo(tmp_path)
    key_path = ssh_keygen_key(tmp_path / "id_ed25519")
    (tmp_path / "statement.yaml").write_bytes(_statement(commit))
    git(repo, "-c", "gpg.format=ssh", "-c", f"user.signingkey={key_path}", "tag", "-s",
        "-F", str(tmp_path / "statement.yaml"), "librarian-release/1")
    tag_id = git_text(repo, "rev-parse", "refs/tags/librarian-release/1").strip()
    raw = git(repo, "cat-file", "tag", tag_id).stdout
    trusted = read_public_key(str(key_path) + ".pub")
    release = verify_release(raw, source="team", ref_name="librarian-release/1", tag_id=tag_id,
                             trusted=[trusted], fetched_commit=commit)
    assert release.signer == trusted and release.statement.items == {"skills/pdf": DIGEST}
    # the same tag offered under another release name is not this release
    with pytest.raises(TrustError, match="does not cover this tag"):
        verify_release(raw, source="team", ref_name="librarian-release/2", tag_id=tag_id,
                       trusted=[trusted])
    # and a tag whose statement is hand-edited after signing does not verify
    edited = raw.replace(b"version: 1", b"version: 2")
    with pytest.raises(TrustError, match="does not match"):
        verify_release(edited, source="team", ref_name="librarian-release/1", tag_id=tag_id,
                       trusted=[trusted])


@requires_ssh_keygen
def test_unsigned_and_untrusted_git_tags_are_refused(tmp_path: Path) -> None:
    repo, commit = _repo(tmp_path)
    (tmp_path / "statement.yaml").write_bytes(_statement(commit))
    git(repo, "tag", "-a", "-F", str(tmp_path / "statement.yaml"), "librarian-release/1")
    raw = git(repo, "cat-file", "tag", "librarian-release/1").stdout
    key = generate_key(tmp_path / "release")
    with pytest.raises(TrustError, match="not signed"):
        verify_release(raw, source="team", ref_name="librarian-release/1", tag_id="0" * 40,
                       trusted=[key.public])
    stranger = generate_key(tmp_path / "stranger")
    forged = signed_tag(commit, "librarian-release/1", b"Mallory <m@example.org> 1 +0000",
                        _statement(commit), stranger)
    with pytest.raises(TrustError, match=re.escape(f"signed by {stranger.public.fingerprint}")):
        verify_release(forged, source="team", ref_name="librarian-release/1", tag_id="0" * 40,
                       trusted=[key.public])


def test_statement_times_are_utc_and_expiry_is_checked() -> None:
    now = datetime(2026, 12, 1, 9, 0, 30, 123, tzinfo=timezone.utc)
    statement = new_statement(3, "a" * 40, {}, now=now, expires_days=2)
    assert statement.created == now.replace(microsecond=0)
    assert statement.expires - statement.created == timedelta(days=2)
    assert b"created: '2026-12-01T09:00:30Z'" in dump_statement(statement)
    assert not statement.expired(now + timedelta(days=1))
    assert statement.expired(now + timedelta(days=2))
    with pytest.raises(UsageError):
        new_statement(3, "a" * 40, {}, expires_days=0)
