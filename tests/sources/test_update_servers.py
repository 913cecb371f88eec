"""`update` over real git transports started on loopback by the tests: a local bare
repository, `git daemon` (git://), dulwich's smart HTTP server (http://), and servers that
fail (connection refused, repository missing, ref missing)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.helpers import GIT, cli, head, tree_snapshot
from support.sources_helpers import (
    TRANSPORTS,
    Upstream,
    edit_source,
    free_port,
    git_daemon,
    http_server,
    served_url,
)

from librarian.agents.claude_manifests import GENERATED
from librarian.formats.config import load_lock

Cap = pytest.CaptureFixture[str]



@pytest.fixture
def served(tmp_path: Path) -> Upstream:
    up = Upstream(tmp_path / "srv" / "team.git")
    up.skill("skills/pdf").skill("skills/docx").recipe("recipes/review").commit("first")
    return up


@pytest.fixture(params=TRANSPORTS)
def url(request: pytest.FixtureRequest, served: Upstream) -> Iterator[str]:
    with served_url(request.param, served) as found:
        yield found


def test_install_then_incremental_update_over_each_transport(
    library: Path, served: Upstream, url: str, capsys: Cap
) -> None:
    assert cli(capsys, library, "source", "add", "team", url).code == 0
    first = cli(capsys, library, "update", "--json")
    assert first.code == 0, first.err
    assert first.json["plans"][0]["counts"]["add"] == 3
    served.skill("skills/pdf", body="Two.\n").remove("skills/docx").skill("skills/new")
    served.commit("second")
    second = cli(capsys, library, "update", "--json")
    assert second.code == 0, second.err
    counts = second.json["plans"][0]["counts"]
    assert (counts["add"], counts["update"], counts["remove"], counts["keep"]) == (1, 1, 1, 1)
    pin = load_lock((library / "librarian.lock").read_bytes())["team"]
    assert pin.commit == served.commits[-1]
    assert pin.url == url
    skill = library / "sources" / "team" / "skills" / "pdf" / "SKILL.md"
    assert skill.read_text().endswith("Two.\n")
    again = cli(capsys, library, "update", "--json")
    assert again.code == 0 and again.json["up_to_date"] is True


def _assert_nothing_changed(library: Path, old: str | None, snapshot: object) -> None:
    assert head(library) == old
    assert tree_snapshot(library) == snapshot
    state = library / ".git" / "librarian"
    assert not (state / "journal.json").exists()
    assert not list((state / "stage").glob("*")) if (state / "stage").exists() else True


def _installed(library: Path, capsys: Cap, served: Upstream) -> tuple[str | None, object]:
    assert cli(capsys, library, "source", "add", "team", served.url).code == 0
    assert cli(capsys, library, "update").code == 0
    return head(library), tree_snapshot(library)


def _point_at(library: Path, url: str) -> None:
    """Hand-edit library.yaml's URL (as a user would) and commit it: update follows only the
    committed library.yaml."""
    edit_source(library, "team", url=url)


@pytest.mark.parametrize("scheme", ["git", "http"])
def test_connection_refused_is_exit_3_and_changes_nothing(
    library: Path, served: Upstream, capsys: Cap, scheme: str
) -> None:
    _installed(library, capsys, served)
    port = free_port()  # nothing listens there any more
    _point_at(library, f"{scheme}://alice:s3cret@127.0.0.1:{port}/team.git")
    old, snapshot = head(library), tree_snapshot(library)
    result = cli(capsys, library, "update", "--json")
    assert result.code == 3, result.err
    assert "s3cret" not in result.out + result.err and "alice" not in result.err
    assert result.json["kind"] == "error"
    _assert_nothing_changed(library, old, snapshot)
    assert cli(capsys, library, "outdated").code == 3


def test_missing_repository_on_each_server_is_exit_2(
    library: Path, served: Upstream, capsys: Cap, tmp_path: Path
) -> None:
    _installed(library, capsys, served)
    old, snapshot = head(library), tree_snapshot(library)
    urls = [str(tmp_path / "nothing-here"), "file://" + str(tmp_path / "nothing-here")]
    with http_server({"/team.git": served.path}) as http:
        urls.append(f"{http}/missing.git")
        if GIT is not None:
            with git_daemon(served.path.parent) as daemon:
                urls.append(f"{daemon}/missing.git")
                for url in urls:
                    _point_at(library, url)
                    old, snapshot = head(library), tree_snapshot(library)
                    result = cli(capsys, library, "update")
                    assert result.code == 2, (url, result.err)
                    _assert_nothing_changed(library, old, snapshot)
        else:
            for url in urls:
                _point_at(library, url)
                snapshot = tree_snapshot(library)
                assert cli(capsys, library, "update").code == 2


def test_missing_ref_is_exit_2_and_lists_the_refs(
    library: Path, served: Upstream, capsys: Cap
) -> None:
    assert cli(capsys, library, "source", "add", "team", served.url, "--ref", "nope").code == 0
    old, snapshot = head(library), tree_snapshot(library)
    result = cli(capsys, library, "update")
    assert result.code == 2
    assert "no ref 'nope'" in result.err and "refs/heads/main" in result.err
    _assert_nothing_changed(library, old, snapshot)


def test_tags_are_followed(library: Path, served: Upstream, capsys: Cap) -> None:
    from dulwich.objects import Tag
    from dulwich.repo import Repo

    with Repo(str(served.path)) as repo:
        tag = Tag()
        main = repo.refs[b"refs/heads/main"]
        tag.name, tag.object = b"v1", (type(repo[main]), main)
        tag.tagger, tag.tag_time, tag.tag_timezone = b"T <t@e>", 0, 0
        tag.message = b"release\n"
        repo.object_store.add_object(tag)
        repo.refs[b"refs/tags/v1"] = tag.id
    assert cli(capsys, library, "source", "add", "team", served.url, "--ref", "v1").code == 0
    result = cli(capsys, library, "update", "--json")
    assert result.code == 0, result.err
    assert result.json["plans"][0]["new_commit"] == served.commits[-1]


@pytest.mark.parametrize("hostile", ["ssh://-oProxyCommand=true/x.git",
                                     "-oProxyCommand=true:x.git",
                                     "ssh://-oProxyCommand=true@example.org/x.git"])
def test_a_hostile_ssh_url_committed_by_hand_is_exit_2(
    library: Path, served: Upstream, capsys: Cap, hostile: str
) -> None:
    _installed(library, capsys, served)
    _point_at(library, hostile)
    old, snapshot = head(library), tree_snapshot(library)
    for command in ("update", "outdated"):
        result = cli(capsys, library, command)
        assert result.code == 2, (command, result.err)
        assert "starts with '-'" in result.err
    _assert_nothing_changed(library, old, snapshot)


@pytest.mark.parametrize("error", ["StrangeHostname", "TransportNotAllowed"])
def test_dulwich_refusing_a_url_is_a_usage_error(
    library: Path, monkeypatch: pytest.MonkeyPatch, error: str
) -> None:
    import dulwich.client

    from librarian.errors import UsageError
    from librarian.git import remote as gitremote
    from librarian.library.layout import Library

    def refuse(*args: object, **kwargs: object) -> None:
        raise getattr(dulwich.client, error)("-oProxyCommand=true")

    monkeypatch.setattr(gitremote, "transfer", refuse)
    with Library(library, GENERATED).store() as store, pytest.raises(UsageError) as raised:
        gitremote.fetch_ref(store, "ssh://example.org/x.git", "main",
                            into=b"refs/librarian/sources/x", have=None)
    assert error in raised.value.message


def test_a_query_string_token_never_reaches_a_message(
    library: Path, served: Upstream, capsys: Cap
) -> None:
    _installed(library, capsys, served)
    port = free_port()  # nothing listens there
    _point_at(library, f"http://127.0.0.1:{port}/team.git?private_token=glpat-s3cret")
    old, snapshot = head(library), tree_snapshot(library)
    for args in (("update",), ("update", "--json"), ("outdated",), ("source", "list")):
        result = cli(capsys, library, *args)
        assert "glpat-s3cret" not in result.out + result.err, args
    _assert_nothing_changed(library, old, snapshot)
