"""A change never writes through a symbolic link: every ancestor of every path it names
is checked, once each, however many paths share it."""

from __future__ import annotations

from pathlib import Path

import pytest

from librarian.errors import UsageError
from librarian.library.guard import WRITTEN_TOP, refuse_linked_paths


def _library(tmp_path: Path) -> Path:
    root = tmp_path / "library"
    for name in WRITTEN_TOP:
        if "." not in name:
            (root / name).mkdir(parents=True, exist_ok=True)
    return root


@pytest.mark.parametrize("linked", ["sources/team", "sources/team/skills",
                                    "sources/team/skills/b", "sources/team/skills/b/SKILL.md"])
def test_a_link_at_any_depth_is_refused_among_many_paths(tmp_path: Path, linked: str) -> None:
    root = _library(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / linked).parent.mkdir(parents=True, exist_ok=True)
    (root / linked).symlink_to(outside)
    paths = [f"sources/team/skills/{n}" for n in ("a", "a", "b")] + \
        ["sources/team/skills/b/SKILL.md"]
    with pytest.raises(UsageError, match="symbolic link") as refused:
        refuse_linked_paths(root, paths)
    assert linked in refused.value.message


def test_paths_below_a_missing_directory_are_not_refused(tmp_path: Path) -> None:
    root = _library(tmp_path)
    refuse_linked_paths(root, [f"sources/new/skills/s{n}" for n in range(50)])
    (root / "sources").mkdir(exist_ok=True)
    (root / "sources" / "other").symlink_to(tmp_path)  # not on any path named
    refuse_linked_paths(root, ["sources/new/skills/s0", "sources/othername/x"])
