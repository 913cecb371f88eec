"""On a terminal the progress display leaves no frame behind: what the screen shows after
``update``, ``outdated`` and ``retain`` is their output alone. Real processes on a real
pseudo-terminal (stdout and stderr both on it, as in an interactive shell); the screen is
rebuilt from the bytes by a small emulator of the few controls rich uses."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import cli, make_skill
from support.sources_helpers import Upstream

_CONTROL = re.compile(r"\x1b\[(\??)([0-9;]*)([A-Za-z])|\r|\n|[^\x1b\r\n]+")
BAR = "\u2501"  # the bar's character


def screen_of(raw: str) -> list[str]:
    """The lines a terminal shows after ``raw``: text, CR, LF, cursor up (``ESC[nA``) and
    erase in line (``ESC[2K``); colours and cursor visibility change nothing shown."""
    lines, row, col = [""], 0, 0
    for match in _CONTROL.finditer(raw):
        token = match.group(0)
        if token == "\r":
            col = 0
        elif token == "\n":
            row += 1
            col = 0
            if row == len(lines):
                lines.append("")
        elif match.group(3) == "A" and not match.group(1):
            row = max(0, row - int(match.group(2) or 1))
        elif match.group(3) == "K" and match.group(2) == "2":
            lines[row] = ""
        elif not token.startswith("\x1b"):
            line = lines[row].ljust(col)
            lines[row] = line[:col] + token + line[col + len(token):]
            col += len(token)
    return [line.rstrip() for line in lines if line.strip()]


def _on_a_terminal(*args: str, cwd: Path) -> tuple[int, list[str]]:
    master, slave = os.openpty()
    env = {k: v for k, v in os.environ.items() if k != "TERM"}
    env.update(TERM="xterm", COLUMNS="100")
    proc = subprocess.Popen([sys.executable, "-m", "librarian", *args], cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=60), screen_of(b"".join(chunks).decode("utf-8", "replace"))


def test_the_emulator_keeps_a_frame_written_beside_the_output() -> None:
    frame = f"\x1b[?25l\r\x1b[2K\x1b[32m\u280b\x1b[0m install {BAR * 3} 0/2"
    assert screen_of(frame + "result\r\n") == [f"\u280b install {BAR * 3} 0/2result"]
    assert screen_of(frame + "\r\x1b[2Kresult\r\n") == ["result"]
    assert screen_of("a\r\nb\r\n\x1b[1A\x1b[2Kc\r\n") == ["a", "c"]


@pytest.fixture
def subscribed(library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    up = Upstream(tmp_path / "up.git")
    for number in range(3):
        up.skill(f"skills/s{number}")
    up.commit("first")
    assert cli(capsys, library, "source", "add", "team", up.url).code == 0
    return library


@pytest.mark.parametrize("command", [("outdated",), ("update",), ("retain",)])
def test_no_frame_stays_on_the_screen(subscribed: Path, sources: Path,
                                      command: tuple[str, ...]) -> None:
    args = (*command, str(make_skill(sources, "notes"))) if command == ("retain",) else command
    code, screen = _on_a_terminal(*args, cwd=subscribed)
    assert code in (0, 10), screen
    assert screen, "the command printed nothing"
    assert not any(BAR in line for line in screen), screen
    assert not any(re.search(r"\d+/(\d+|\?)$", line) for line in screen), screen
