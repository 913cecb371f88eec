"""What the library reports never depends on what a cache remembers, and what is written
is durable as written (two findings of a review of the first install's speed-ups)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.helpers import cli, cli_ok
from support.sources_helpers import Upstream

Cap = pytest.CaptureFixture[str]


def _names(capsys: Cap, library: Path) -> list[str]:
    listed = json.loads(cli_ok(capsys, library, "inspect", "--json").out)
    return sorted(item["name"] for item in listed["items"])


def test_an_items_kind_does_not_depend_on_the_kinds_memo(
    library: Path, tmp_path: Path, capsys: Cap
) -> None:
    """A skill holding a *directory* named recipe.yaml: validation calls it a skill and
    install remembers that (remember_kind); the listing without the memo (``item_kind``,
    both manifest names among the tree's entries) calls it no item. The two must agree."""
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/pdf").skill("skills/odd")
    up.put("skills/odd/recipe.yaml/notes.md", b"a directory named recipe.yaml\n")
    up.commit("first")
    cli_ok(capsys, library, "source", "add", "team", up.url)
    cli_ok(capsys, library, "update")
    with_memo = _names(capsys, library)
    # The memo is a cache: a clone of the library, or one whose cache was removed, has none.
    (library / ".git" / "librarian" / "cache" / "kinds.bin").unlink()
    assert _names(capsys, library) == with_memo
    checked = cli(capsys, library, "check")  # plugin.json was written from the memo's kinds
    assert checked.code == 0, checked.out


@pytest.mark.crash
def test_a_files_mode_is_set_before_it_is_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a transaction's one sync (recovery's roll-forward writes files this way) the
    fsync must cover the mode: a chmod after it may be lost in a crash."""
    import os

    from librarian.core.fsutil import write_file_durably

    calls: list[str] = []
    real_fsync, real_fchmod = os.fsync, os.fchmod
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "fchmod",
                        lambda fd, mode: (calls.append("fchmod"), real_fchmod(fd, mode))[1])
    old = os.umask(0o077)
    try:
        write_file_durably(tmp_path / "run.sh", b"#!/bin/sh\n", executable=True)
    finally:
        os.umask(old)
    assert (tmp_path / "run.sh").stat().st_mode & 0o777 == 0o755
    assert calls == ["fchmod", "fsync"]
