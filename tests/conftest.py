"""Fixtures shared by the test suite.

Every test runs with HOME pointing at a temporary directory, without inherited GIT_* or
LIBRARIAN_* variables, and with GIT_CONFIG_NOSYSTEM=1, so neither the developer's git
configuration nor a surrounding repository can leak in. A test that creates or modifies
anything at the top level of the real home directory fails.

Every test but those marked ``crash`` (kills, recovery, a full disk, durability) runs with
``LIBRARIAN_TEST_FSYNC=0``: librarian's writes stay atomic but are not fsynced, in this
process and in every librarian it starts. The ``crash`` tests always see real fsync.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support import helpers

from librarian.agents.claude_manifests import GENERATED

_REAL_HOME = Path(os.environ.get("HOME") or Path.home())


def _home_listing() -> dict[str, tuple[int, int]]:
    """Top level of the real home (and the home itself): name -> (mtime_ns, size)."""
    listing: dict[str, tuple[int, int]] = {}
    try:
        st = _REAL_HOME.lstat()
        listing["."] = (st.st_mtime_ns, 0)
        for entry in _REAL_HOME.iterdir():
            est = entry.lstat()
            listing[entry.name] = (est.st_mtime_ns, est.st_size if entry.is_file() else 0)
    except OSError:
        pass
    return listing


@pytest.fixture(autouse=True)
def isolated_environment(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> Iterator[Path]:
    before = _home_listing()
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    for key in list(os.environ):
        if key.startswith(("GIT_", "LIBRARIAN_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    if request.node.get_closest_marker("crash") is None:
        monkeypatch.setenv("LIBRARIAN_TEST_FSYNC", "0")
    yield home
    after = _home_listing()
    if after != before:
        added = sorted(set(after) - set(before))
        removed = sorted(set(before) - set(after))
        changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
        pytest.fail(
            f"the test touched the real home {_REAL_HOME}: added {added}, removed {removed}, "
            f"changed {changed}"
        )


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """A freshly initialised library at ``tmp_path/lib`` (made through the API)."""
    from librarian.ops.create import init_library

    root = tmp_path / "lib"
    init_library(root, "test-lib", GENERATED)
    return root


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    """A directory for source trees, outside the library."""
    path = tmp_path / "src"
    path.mkdir()
    return path


@pytest.fixture
def make_skill() -> Callable[..., Path]:
    return helpers.make_skill


@pytest.fixture
def make_recipe() -> Callable[..., Path]:
    return helpers.make_recipe
