"""The gate on the host: `check --commit REV` in a bare repository, and the `pre-receive`
hook `hooks install --server` installs, refusing (over git daemon and git http-backend)
a push whose new tip fails `check` though plain git merged it cleanly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.helpers import GIT, git, git_text, make_recipe, make_skill
from support.team_helpers import act, bare_with_library, git_daemon_rw, http_backend, librarian

pytestmark = pytest.mark.skipif(GIT is None, reason="the git binary is not installed")


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    base = tmp_path / "srv"
    base.mkdir()
    return bare_with_library(base)


def test_check_commit_reads_the_committed_tree_of_a_bare_repository(
        bare: Path, tmp_path: Path) -> None:
    assert not (bare / "library.yaml").exists()
    good = librarian("check", "--commit", "main", "--json", cwd=bare)
    assert good.returncode == 0, good.stderr
    # a commit made by hand that names a recipe the library lacks
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(bare), str(work))
    (work / "tools.yaml").write_text(
        "tools:\n  t1:\n    recipe: recipes/t1\n    digest: sha256:" + "0" * 64 + "\n")
    git(work, "commit", "-qam", "expose by hand")
    git(work, "push", "-q", "origin", "main")
    bad = librarian("check", "--commit", "main", cwd=bare)
    assert bad.returncode == 2
    assert "tool 't1' names recipes/t1, which is not in the library" in bad.stdout
    assert librarian("check", "--commit", "main~1", cwd=bare).returncode == 0
    unknown = librarian("check", "--commit", "nope", cwd=bare)
    assert unknown.returncode == 2 and "unknown revision" in unknown.stderr


def test_hooks_install_server_needs_a_bare_repository(tmp_path: Path) -> None:
    done = librarian("hooks", "install", "--server", cwd=tmp_path)
    assert done.returncode == 2 and "not a bare git repository" in done.stderr


@pytest.fixture(params=["git-daemon", "http-backend"])
def served(request: pytest.FixtureRequest, bare: Path) -> Iterator[str]:
    assert librarian("hooks", "install", "--server", cwd=bare).returncode == 0
    serve = git_daemon_rw if request.param == "git-daemon" else http_backend
    with serve(bare.parent) as url:
        yield f"{url}/team.git"


def _clone(url: str, target: Path) -> Path:
    from librarian.agents.claude_manifests import GENERATED
    from librarian.ops.hooks import clone_library

    clone_library(url, target, GENERATED)
    return target


@pytest.mark.parametrize(("there", "here", "problem"), [
    (("retire", "t1"), ("expose", "t1"), "tool 't1' names recipes/t1"),
    (("retire", "beta"), ("hide", "beta"), "skills.hidden names beta"),
])
def test_the_host_refuses_a_clean_merge_that_breaks_the_library(
        served: str, bare: Path, tmp_path: Path, there: tuple[str, ...],
        here: tuple[str, ...], problem: str) -> None:
    first = _clone(served, tmp_path / "a")
    sources = tmp_path / "src"
    for args in (("retain", str(make_recipe(sources, "t1"))),
                 ("retain", str(make_skill(sources, "beta")))):
        assert act(first, *args) == 0
    git(first, "push", "-q", "origin", "main")
    second = _clone(served, tmp_path / "b")
    assert act(first, *there) == 0
    git(first, "push", "-q", "origin", "main")
    assert act(second, *here) == 0
    pulled = git(second, "pull", "--rebase", "-q", check=False)
    assert pulled.returncode == 0  # git merges it without a conflict...
    said = pulled.stderr.decode()
    assert problem in said and "left the library invalid" in said  # ...the hook says so
    tip = git_text(bare, "rev-parse", "main")
    pushed = git(second, "push", "origin", "main", check=False)
    assert pushed.returncode != 0
    assert problem in pushed.stderr.decode() and "pre-receive" in pushed.stderr.decode()
    assert git_text(bare, "rev-parse", "main") == tip
