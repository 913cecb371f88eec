"""``init`` and ``demo`` where no library can be made: a parent that is a file, a path on
a virtual file system, a directory without write permission. Exit 2 with one line,
nothing left behind; never the exit 1 of a bug."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.helpers import assert_one_error_line, run_main


@pytest.mark.parametrize("command", ["init", "demo"])
def test_a_parent_that_is_a_file_is_bad_input(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path, command: str) -> None:
    (tmp_path / "f").write_text("a file\n")
    result = run_main(capsys, command, str(tmp_path / "f" / "x"))
    assert result.code == 2, result.err
    line = assert_one_error_line(result.err)
    assert "Not a directory" in line and "internal error" not in line
    assert (tmp_path / "f").read_text() == "a file\n"


@pytest.mark.parametrize("where", ["/proc/x", "/sys/x"])
def test_a_virtual_file_system_is_bad_input(capsys: pytest.CaptureFixture[str],
                                            where: str) -> None:
    if not Path(where).parent.is_dir():
        pytest.skip(f"{Path(where).parent} is not mounted here")
    result = run_main(capsys, "init", where, "--json")
    assert result.code == 2, result.err
    assert result.json["kind"] == "error" and result.json["path"] == where
    assert "internal error" not in assert_one_error_line(result.err)
    assert not Path(where).exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through a mode of 0555")
def test_a_read_only_directory_is_bad_input(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    target = tmp_path / "ro"
    target.mkdir()
    target.chmod(0o555)
    try:
        for path in (target, target / "sub"):
            result = run_main(capsys, "init", str(path))
            assert result.code == 2, result.err
            assert "Permission denied" in assert_one_error_line(result.err)
        assert list(target.iterdir()) == []
    finally:
        target.chmod(0o755)
