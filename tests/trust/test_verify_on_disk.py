"""`verify` re-checks what agents read: the installed content on disk, not only the
committed tree. An edited, deleted or added file of a signed item names the item, exit 4."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import assert_one_error_line, cli
from support.trust_helpers import Publisher

from librarian.trust.keys import SigningKey, generate_key

Cap = pytest.CaptureFixture[str]


@pytest.fixture
def subscribed(library: Path, tmp_path: Path, capsys: Cap) -> Path:
    (tmp_path / "keys").mkdir()
    key: SigningKey = generate_key(tmp_path / "keys" / "release", comment="pub@example.org")
    up = Publisher(tmp_path / "up.git")
    up.skill("skills/pdf").recipe("recipes/review")
    up.commit("first")
    up.release(key, 1)
    assert cli(capsys, library, "source", "add", "team", up.url,
               "--trust", str(tmp_path / "keys" / "release.pub")).code == 0
    assert cli(capsys, library, "update").code == 0
    assert cli(capsys, library, "verify").code == 0
    return library


def _refused(capsys: Cap, library: Path, *expected: str) -> None:
    result = cli(capsys, library, "verify")
    assert result.code == 4, (result.out, result.err)
    line = assert_one_error_line(result.err)
    for text in expected:
        assert text in line, line


def test_a_local_edit_of_a_signed_item_fails_verify(subscribed: Path, capsys: Cap) -> None:
    target = subscribed / "sources/team/skills/pdf/SKILL.md"
    target.write_text(target.read_text() + "Injected instruction.\n")
    _refused(capsys, subscribed, "skills/pdf", "on disk", "local edit")
    target.write_text(target.read_text().replace("Injected instruction.\n", ""))
    assert cli(capsys, subscribed, "verify").code == 0


def test_a_deleted_file_of_a_signed_item_fails_verify(subscribed: Path, capsys: Cap) -> None:
    (subscribed / "sources/team/recipes/review/run.sh").unlink()
    _refused(capsys, subscribed, "recipes/review")


def test_a_deleted_item_and_an_added_file_fail_verify(subscribed: Path, capsys: Cap) -> None:
    import shutil

    (subscribed / "sources/team/skills/pdf/extra.md").write_text("more\n")
    _refused(capsys, subscribed, "skills/pdf")
    shutil.rmtree(subscribed / "sources/team/skills/pdf")
    _refused(capsys, subscribed, "skills/pdf: missing on disk")


def test_a_symlink_in_an_item_is_named_not_followed(subscribed: Path, capsys: Cap) -> None:
    target = subscribed / "sources/team/skills/pdf/SKILL.md"
    outside = subscribed.parent / "outside.md"
    outside.write_bytes(target.read_bytes())
    target.unlink()
    target.symlink_to(outside)
    _refused(capsys, subscribed, "skills/pdf", "not a regular file")
