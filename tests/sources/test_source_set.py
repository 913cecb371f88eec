"""`source set NAME [--url] [--ref] [--include]… [--exclude]… [--trust]…`: one commit to
library.yaml, the lock kept; the next `update` plans the new settings against the pins."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.helpers import GIT, assert_one_error_line, cli, commit_count, head, trailers
from support.sources_helpers import Upstream

from librarian.formats.config import load_library_config, load_lock

Cap = pytest.CaptureFixture[str]


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/pdf").skill("skills/docx").recipe("recipes/review").commit("first")
    return up


@pytest.fixture
def installed(library: Path, upstream: Upstream, capsys: Cap) -> Path:
    assert cli(capsys, library, "source", "add", "team", upstream.url).code == 0
    assert cli(capsys, library, "update").code == 0
    return library


def _source(library: Path):  # type: ignore[no-untyped-def]
    return load_library_config((library / "library.yaml").read_bytes()).sources["team"]


def _lock(library: Path) -> bytes:
    return (library / "librarian.lock").read_bytes()


def test_set_include_is_one_commit_and_keeps_the_lock(installed: Path, capsys: Cap) -> None:
    before, lock = commit_count(installed), _lock(installed)
    result = cli(capsys, installed, "source", "set", "team", "--include", "skills/*", "--json")
    assert result.code == 0, result.err
    assert result.json["kind"] == "source_set" and result.json["changed"] == ["include"]
    assert commit_count(installed) == before + 1 and result.json["commit"] == head(installed)
    assert _source(installed).include == ("skills/*",)
    assert _lock(installed) == lock  # the pins stay until update
    if GIT:
        assert ("Librarian-Event", "source-set") in trailers(installed)
    updated = cli(capsys, installed, "update", "--json")
    assert updated.code == 0, updated.err
    counts = updated.json["plans"][0]["counts"]
    assert (counts["add"], counts["update"], counts["remove"], counts["keep"]) == (0, 0, 1, 2)
    assert not (installed / "sources/team/recipes/review").exists()
    assert set(load_lock(_lock(installed))["team"].items) == {"skills/pdf", "skills/docx"}
    # clearing the filter brings it back
    assert cli(capsys, installed, "source", "set", "team", "--include", "").code == 0
    assert _source(installed).include == ()
    again = cli(capsys, installed, "update", "--json")
    assert again.json["plans"][0]["counts"]["add"] == 1


def test_set_url_to_a_mirror_keeps_every_pin(
    installed: Path, upstream: Upstream, tmp_path: Path, capsys: Cap
) -> None:
    mirror = tmp_path / "mirror.git"
    shutil.copytree(upstream.path, mirror)
    pins = load_lock(_lock(installed))["team"].items
    result = cli(capsys, installed, "source", "set", "team", "--url", str(mirror), "--json")
    assert result.code == 0, result.err and result.json["changed"] == ["url"]
    assert _source(installed).url == str(mirror) and _source(installed).ref == "main"
    updated = cli(capsys, installed, "update", "--json")
    assert updated.code == 0, updated.err
    counts = updated.json["plans"][0]["counts"]
    assert (counts["add"], counts["update"], counts["remove"], counts["keep"]) == (0, 0, 0, 3)
    lock = load_lock(_lock(installed))["team"]
    assert lock.items == pins and lock.url == str(mirror)


def test_set_ref_follows_another_branch(
    installed: Path, upstream: Upstream, capsys: Cap
) -> None:
    from dulwich.repo import Repo

    upstream.skill("skills/pdf", body="Stable.\n").commit("stable")
    with Repo(str(upstream.path)) as repo:
        repo.refs[b"refs/heads/stable"] = repo.refs[b"refs/heads/main"]
    upstream.skill("skills/pdf", body="Unstable.\n").commit("work in progress")
    assert cli(capsys, installed, "source", "set", "team", "--ref", "stable").code == 0
    assert _source(installed).ref == "stable"
    assert cli(capsys, installed, "update").code == 0
    assert (installed / "sources/team/skills/pdf/SKILL.md").read_text().endswith("Stable.\n")


def test_set_trust_makes_the_source_signed(installed: Path, tmp_path: Path, capsys: Cap) -> None:
    from librarian.trust.keys import generate_key

    (tmp_path / "keys").mkdir()
    key = generate_key(tmp_path / "keys" / "k", comment="pub@example.org")
    result = cli(capsys, installed, "source", "set", "team", "--trust", key.public.line())
    assert result.code == 0, result.err
    assert _source(installed).trust == (key.public.line(),)
    refused = cli(capsys, installed, "update")  # the upstream has no release yet
    assert refused.code == 4, refused.err
    assert cli(capsys, installed, "source", "set", "team", "--trust", "").code == 0
    assert _source(installed).trust == ()


@pytest.mark.parametrize(("args", "expected"), [
    (("source", "set", "nope", "--ref", "x"), "no source named 'nope'"),
    (("source", "set", "team"), "nothing to change"),
    (("source", "set", "team", "--ref", "main"), "already has these settings"),
    (("source", "set", "team", "--ref", "a..b"), "invalid ref"),
    (("source", "set", "team", "--include", "[z-a]"), "include"),
    (("source", "set", "team", "--url", "https://u:secret@example.org/x.git"), "password"),
    (("source", "set", "team", "--trust", "ssh-rsa AAAA"), ""),
])
def test_bad_settings_are_refused_with_nothing_committed(
    installed: Path, capsys: Cap, args: tuple[str, ...], expected: str
) -> None:
    old, config, lock = head(installed), (installed / "library.yaml").read_bytes(), \
        _lock(installed)
    result = cli(capsys, installed, *args)
    assert result.code == 2, (result.out, result.err)
    assert expected in assert_one_error_line(result.err)
    assert "secret" not in result.err
    assert head(installed) == old and _lock(installed) == lock
    assert (installed / "library.yaml").read_bytes() == config
