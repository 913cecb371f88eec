"""`librarian release` on a publishing repository (plain git, or a librarian library), judged
by plain git (`git tag -v`, `git fsck --strict`), and releases made by `git tag -s` installed
by a subscriber."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import assert_one_error_line, git, git_text, make_skill, requires_git, run_main
from support.trust_helpers import allowed_signers, requires_ssh_keygen, ssh_keygen_key

from librarian.agents.claude_manifests import GENERATED
from librarian.core.digest import content_digest
from librarian.formats.config import load_lock
from librarian.trust.keys import generate_key, read_public_key
from librarian.trust.policy import verify_release

Cap = pytest.CaptureFixture[str]
SKILL = "---\nname: {name}\ndescription: Does {name}.\n---\nDo it.\n"


def publishing_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for name in ("pdf", "docx"):
        (path / "skills" / name).mkdir(parents=True)
        (path / "skills" / name / "SKILL.md").write_text(SKILL.format(name=name))
    (path / "README.md").write_text("# a collection\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    return path


def release(capsys: Cap, repo: Path, key: Path, *extra: str):  # type: ignore[no-untyped-def]
    return run_main(capsys, "--library", str(repo), "release", "--key", str(key), *extra)


@requires_git
@requires_ssh_keygen
def test_release_makes_a_tag_plain_git_verifies(tmp_path: Path, capsys: Cap) -> None:
    repo = publishing_repo(tmp_path / "pub")
    assert run_main(capsys, "key", "generate", str(tmp_path / "k" / "release"),
                    "--comment", "alice@example.org").code == 0
    key = tmp_path / "k" / "release"
    result = release(capsys, repo, key, "--expires", "30", "--json")
    assert result.code == 0, result.err
    assert result.json["name"] == "librarian-release/1" and result.json["items"] == 2
    head = git_text(repo, "rev-parse", "HEAD").strip()
    assert git_text(repo, "rev-parse", "librarian-release/1^{commit}").strip() == head
    signers = allowed_signers(tmp_path / "allowed", (tmp_path / "k" / "release.pub").read_text())
    checked = git(repo, "-c", "gpg.format=ssh", "-c", f"gpg.ssh.allowedSignersFile={signers}",
                  "tag", "-v", "librarian-release/1", check=False)
    assert checked.returncode == 0, checked.stderr.decode()
    assert b"Good \"git\" signature for alice@example.org" in checked.stderr
    assert b"librarian-release: 1\nversion: 1\n" in checked.stdout
    assert git(repo, "fsck", "--strict", check=False).returncode == 0
    # N is one above the highest, whoever made the others
    git(repo, "tag", "librarian-release/7")
    assert release(capsys, repo, key, "--json").json["name"] == "librarian-release/8"
    assert git_text(repo, "status", "--porcelain") == ""  # a release writes no file


@requires_git
@requires_ssh_keygen
def test_release_refuses_a_dirty_tree_an_invalid_item_and_a_wrong_key(
    tmp_path: Path, capsys: Cap
) -> None:
    repo = publishing_repo(tmp_path / "pub")
    key = tmp_path / "release"
    generate_key(key)
    tags = git_text(repo, "tag")

    def refused(code: int, text: str, key_path: Path = key) -> None:
        result = release(capsys, repo, key_path)
        assert result.code == code, result.err
        assert text in assert_one_error_line(result.err)
        assert git_text(repo, "tag") == tags

    (repo / "skills" / "pdf" / "SKILL.md").write_text("changed\n")
    refused(3, "uncommitted changes (skills/pdf/SKILL.md)")
    git(repo, "add", ".")
    refused(3, "uncommitted changes")  # staged counts too
    git(repo, "commit", "-q", "-m", "break pdf")
    refused(2, "fail validation")
    (repo / "skills" / "pdf" / "SKILL.md").write_text(SKILL.format(name="pdf"))
    git(repo, "commit", "-q", "-am", "fix pdf")
    refused(2, "ed25519 keys only", ssh_keygen_key(tmp_path / "ecdsa", kind="ecdsa"))
    refused(2, "passphrase", ssh_keygen_key(tmp_path / "locked", passphrase="pass phrase"))
    refused(2, "no private key file", tmp_path / "missing")
    (repo / "untracked.txt").write_text("not part of any commit\n")  # not dirty
    assert release(capsys, repo, key).code == 0


@requires_git
@requires_ssh_keygen
def test_a_subscriber_installs_releases_from_librarian_and_from_git_tag_s(
    tmp_path: Path, library: Path, capsys: Cap
) -> None:
    repo = publishing_repo(tmp_path / "pub")
    ours = tmp_path / "release"
    generate_key(ours)
    theirs = ssh_keygen_key(tmp_path / "id_ed25519")  # a developer's ordinary ssh key
    assert release(capsys, repo, ours).code == 0
    lib = ["--library", str(library)]
    added = run_main(capsys, *lib, "source", "add", "team", str(repo), "--trust",
                     str(ours) + ".pub", "--trust", (tmp_path / "id_ed25519.pub").read_text())
    assert added.code == 0, added.err
    assert run_main(capsys, *lib, "update").code == 0
    assert load_lock((library / "librarian.lock").read_bytes())["team"].release == 1
    # release 2 is made with plain git: the statement from `librarian release`'s format,
    # signed by `git tag -s` with the ssh key
    (repo / "skills" / "pdf" / "SKILL.md").write_text(SKILL.format(name="pdf") + "More.\n")
    git(repo, "commit", "-q", "-am", "two")
    head = git_text(repo, "rev-parse", "HEAD").strip()
    one = git(repo, "cat-file", "tag", "librarian-release/1").stdout.decode()
    statement = one.split("\n\n", 1)[1].split("-----BEGIN", 1)[0]
    old_commit = git_text(repo, "rev-parse", "HEAD~1").strip()
    digest = content_digest([("SKILL.md", False,
                              (repo / "skills" / "pdf" / "SKILL.md").read_bytes())])
    old_digest = statement.split("skills/pdf: ")[1].split()[0]
    statement = (statement.replace("version: 1", "version: 2").replace(old_commit, head)
                 .replace(old_digest, digest))
    (tmp_path / "statement").write_text(statement)
    git(repo, "-c", "gpg.format=ssh", "-c", f"user.signingkey={theirs}", "tag", "-s", "-F",
        str(tmp_path / "statement"), "librarian-release/2")
    raw = git(repo, "cat-file", "tag", "librarian-release/2").stdout
    verify_release(raw, source="team", ref_name="librarian-release/2", tag_id="0" * 40,
                   trusted=[read_public_key(str(theirs) + ".pub")])
    result = run_main(capsys, *lib, "update")
    assert result.code == 0, result.err
    pinned = load_lock((library / "librarian.lock").read_bytes())["team"]
    assert pinned.release == 2 and pinned.commit == head
    assert (library / "sources/team/skills/pdf/SKILL.md").read_text().endswith("More.\n")
    assert run_main(capsys, *lib, "verify").code == 0


def test_a_librarian_library_publishes_its_items(
    tmp_path: Path, library: Path, capsys: Cap
) -> None:
    from librarian.ops.create import init_library

    publisher = tmp_path / "publisher"
    init_library(publisher, "team-lib", GENERATED)
    skill = make_skill(tmp_path / "src", "pdf")
    assert run_main(capsys, "--library", str(publisher), "retain", str(skill)).code == 0
    key = tmp_path / "release"
    generate_key(key)
    result = release(capsys, publisher, key, "--json")
    assert result.code == 0 and result.json["items"] == 1, result.err
    lib = ["--library", str(library)]
    assert run_main(capsys, *lib, "source", "add", "team", str(publisher), "--trust",
                    str(key) + ".pub").code == 0
    assert run_main(capsys, *lib, "update").code == 0
    assert (library / "sources/team/skills/pdf/SKILL.md").is_file()


def test_release_outside_a_git_repository_is_a_usage_error(
    tmp_path: Path, capsys: Cap, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "release"
    generate_key(key)
    monkeypatch.chdir(tmp_path)
    result = run_main(capsys, "release", "--key", str(key))
    assert result.code == 2 and "not inside a git repository" in result.err


def test_key_public_prints_the_line_of_either_file(
    tmp_path: Path, library: Path, capsys: Cap
) -> None:
    key = generate_key(tmp_path / "release", comment="me@example.org")
    for path in (tmp_path / "release", tmp_path / "release.pub"):
        result = run_main(capsys, "key", "public", str(path))
        assert result.code == 0 and result.out.strip() == key.public.line()
    assert run_main(capsys, "key", "generate", str(tmp_path / "release")).code == 3
    # a private key given where a public one belongs is refused without echoing it
    result = run_main(capsys, "--library", str(library), "source", "add", "team",
                      str(library), "--trust", str(tmp_path / "release"))
    assert result.code == 2 and "is a private key" in result.err
    assert "PRIVATE" not in result.err


def test_trust_takes_the_ed25519_keys_of_a_hosts_key_list(
    tmp_path: Path, library: Path, capsys: Cap
) -> None:
    """A git host publishes a user's keys at https://<host>/<user>.keys, one a line, of
    any type: --trust with that file trusts its ed25519 keys, each once."""
    one, two = generate_key(tmp_path / "one"), generate_key(tmp_path / "two")
    rsa = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 alice@laptop"
    listing = tmp_path / "alice.keys"
    listing.write_text(f"{rsa}\n{one.public.line()}\n{two.public.line()}\n")
    result = run_main(capsys, "--library", str(library), "source", "add", "team",
                      str(library), "--trust", str(listing), "--trust", one.public.line(),
                      "--json")
    assert result.code == 0, result.err
    assert result.json["trust"] == [one.public.fingerprint, two.public.fingerprint]
    only_rsa = tmp_path / "bob.keys"
    only_rsa.write_text(rsa + "\n")
    refused = run_main(capsys, "--library", str(library), "source", "add", "other",
                       str(library), "--trust", str(only_rsa))
    assert refused.code == 2 and "ed25519 keys only" in refused.err

