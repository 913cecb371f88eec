"""`source add NAME URL` without `--ref` follows the remote's HEAD, as `git clone` does,
and records the branch it resolved to: over a path, file://, git:// and http://."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dulwich.repo import Repo
from support.helpers import assert_one_error_line, cli, head
from support.sources_helpers import (
    TRANSPORTS,
    Upstream,
    free_port,
    served_url,
)

from librarian.formats.config import load_library_config

Cap = pytest.CaptureFixture[str]


def _move_to(up: Upstream, branch: str) -> None:
    """The upstream's only branch becomes ``branch``, HEAD naming it (git's old default)."""
    with Repo(str(up.path)) as repo:
        tip = repo.refs[b"refs/heads/main"]
        repo.refs[f"refs/heads/{branch}".encode()] = tip
        del repo.refs[b"refs/heads/main"]
        repo.refs.set_symbolic_ref(b"HEAD", f"refs/heads/{branch}".encode())


@pytest.fixture
def served(tmp_path: Path) -> Upstream:
    up = Upstream(tmp_path / "srv" / "team.git")
    up.skill("skills/pdf").recipe("recipes/review").commit("first")
    _move_to(up, "master")
    return up


@pytest.fixture(params=TRANSPORTS)
def url(request: pytest.FixtureRequest, served: Upstream) -> Iterator[str]:
    with served_url(request.param, served) as found:
        yield found


def _ref(library: Path, name: str = "team") -> str:
    return load_library_config((library / "library.yaml").read_bytes()).sources[name].ref


def test_add_without_ref_records_the_remotes_default_branch(
    library: Path, url: str, capsys: Cap
) -> None:
    added = cli(capsys, library, "source", "add", "team", url, "--json")
    assert added.code == 0, added.err
    assert added.json["ref"] == "master"
    assert _ref(library) == "master"
    updated = cli(capsys, library, "update")
    assert updated.code == 0, updated.err
    assert (library / "sources/team/skills/pdf/SKILL.md").is_file()


def test_an_explicit_ref_is_recorded_as_given_without_asking(
    library: Path, served: Upstream, capsys: Cap
) -> None:
    assert cli(capsys, library, "source", "add", "team", served.url, "--ref", "main").code == 0
    assert _ref(library) == "main"


def test_a_detached_head_is_followed_as_head(
    library: Path, served: Upstream, capsys: Cap
) -> None:
    with Repo(str(served.path)) as repo:
        tip = repo.refs[b"refs/heads/master"]
        repo.refs.remove_if_equals(b"HEAD", None)
        repo.refs[b"HEAD"] = tip  # a detached HEAD: no branch named
    assert cli(capsys, library, "source", "add", "team", served.url).code == 0
    assert _ref(library) == "HEAD"
    assert cli(capsys, library, "update").code == 0


def test_an_unreachable_remote_is_refused_with_a_pointer_to_ref(
    library: Path, capsys: Cap
) -> None:
    old = head(library)
    result = cli(capsys, library, "source", "add", "team", f"git://127.0.0.1:{free_port()}/x")
    assert result.code == 3, result.err
    assert "--ref" in assert_one_error_line(result.err)
    assert head(library) == old
