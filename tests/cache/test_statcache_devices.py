"""The stat cache's stamp tells the clock of the file system it is made
on (``.git/librarian/cache``) only. A directory of the library on another file system (a
mount whose timestamps tick in seconds) must not be trusted by it: there a same-size edit
in the same second as a status was missed for good (``status`` said clean ever after)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from librarian.agents.claude_manifests import GENERATED
from librarian.cache import itemscan
from librarian.library.layout import Library
from librarian.ops.retention import retain
from librarian.ops.status import library_status


def test_a_directory_on_another_device_is_judged_by_the_wall_clock(tmp_path: Path) -> None:
    item = tmp_path / "item"
    item.mkdir()
    (item / "SKILL.md").write_bytes(b"x")
    device = item.lstat().st_dev
    trusting = time.time_ns() + 10**12  # a stamp far ahead: nothing written so far is racy
    assert not itemscan.full_scan(str(item), trusting, device, 0).racy
    assert itemscan.full_scan(str(item), trusting, device + 1, 0).racy


def _coarse_mount(image: Path, where: Path) -> bool:
    """An ext2 file system with 128-byte inodes (timestamps in whole seconds) at ``where``."""
    if os.geteuid() != 0 or shutil.which("mke2fs") is None:
        return False
    subprocess.run(["truncate", "-s", "16M", str(image)], check=True)
    made = subprocess.run(["mke2fs", "-q", "-t", "ext2", "-I", "128", "-F", str(image)],
                          capture_output=True)
    return made.returncode == 0 and subprocess.run(
        ["mount", "-o", "loop", str(image), str(where)], capture_output=True).returncode == 0


@pytest.fixture
def coarse_skills(library: Path, tmp_path: Path) -> Iterator[Path]:
    """The library with one retained skill, its skills/ on a 1-second file system."""
    source = tmp_path / "src" / "demo"
    source.mkdir(parents=True)
    (source / "SKILL.md").write_bytes(
        b"---\nname: demo\ndescription: a demo skill\n---\nbody AAAA\n")
    lib = Library(library, GENERATED)
    retain(lib, source)
    skills = library / "skills"
    kept = tmp_path / "kept"
    shutil.copytree(skills, kept, symlinks=True)
    if not _coarse_mount(tmp_path / "fs.img", skills):
        pytest.skip("needs root, mke2fs and a loop device")
    try:
        shutil.rmtree(skills / "lost+found")
        shutil.copytree(kept, skills, symlinks=True, dirs_exist_ok=True)
        yield library
    finally:
        subprocess.run(["umount", str(skills)], check=True)


def _write(path: Path, body: bytes) -> None:
    with path.open("r+b") as handle:  # in place: the same inode and size
        handle.write(b"---\nname: demo\ndescription: a demo skill\n---\nbody " + body + b"\n")


def test_a_same_second_edit_on_a_coarse_mount_is_not_missed(coarse_skills: Path) -> None:
    lib = Library(coarse_skills, GENERATED)
    target = coarse_skills / "skills" / "demo" / "SKILL.md"
    for _attempt in range(5):
        time.sleep(1 - time.time() % 1 + 0.01)  # just after a second began
        second = int(time.time())
        _write(target, b"AAAA")  # the committed bytes
        first = library_status(lib)
        _write(target, b"CCCC")  # same size, same second: the same mtime and ctime
        if int(time.time()) == second:
            break
    else:
        pytest.skip("could not stay within one second")
    assert first.clean
    time.sleep(1.1)
    assert {i.path: i.status for i in library_status(lib).items} == {
        "skills/demo": "modified"}
