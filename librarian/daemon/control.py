"""``librarian daemon start | stop | status``: the library functions behind the commands.

``start`` spawns ``python -m librarian.cli.daemon_main`` in a new session (no terminal, its
own process group), with its working directory where the librarian package is imported
from (so ``sys.path[0]`` adds nothing: never the library, whose files are not code), and
waits for its ``ready`` line on a pipe, which ``serve`` (the server's side) writes once it
listens. Every exchange with a running server is one
request on its socket (``client.connect``: no link followed, peer checked).
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from librarian.daemon import client
from librarian.daemon.child import Runner
from librarian.daemon.server import Server
from librarian.daemon.wire import SOCKET_NAME, open_state_dir, socket_inode
from librarian.errors import ConflictError, UsageError

#: The default idle timeout: after ten minutes without a command the server exits.
DEFAULT_IDLE = 600.0
_START_TIMEOUT = 30.0  # importing the command table on a loaded machine


@dataclass(frozen=True)
class DaemonState:
    """What ``status`` reports (and ``start`` / ``stop`` after acting)."""

    library: str
    socket: str
    running: bool
    pid: int | None = None
    started: float | None = None
    idle_timeout: float | None = None
    served: int | None = None
    note: str | None = None  # e.g. "stale: it has exited", "removed a stale socket"


def supported() -> bool:
    return hasattr(os, "fork") and hasattr(socket, "SO_PEERCRED")


def _state_fd(root: Path, create: bool = False) -> int:
    try:
        return open_state_dir(str(root))
    except FileNotFoundError:
        if not create:
            raise
        git = os.open(root / ".git", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            os.mkdir("librarian", 0o700, dir_fd=git)
        finally:
            os.close(git)
        return open_state_dir(str(root))
    except OSError as exc:
        raise UsageError(
            f"{root}/.git/librarian cannot be used for the daemon's socket: {exc.strerror}",
            hint="it must be a real directory (not a link) owned by you") from None


def _ask(root: Path, kind: bytes) -> bytes | None:
    """The server's answer to one request; None when no server listens."""
    here = os.open(".", os.O_RDONLY | getattr(os, "O_PATH", 0) | os.O_CLOEXEC)
    try:
        connection = client.connect(str(root), here)
    except OSError:
        return None
    finally:
        os.close(here)
    if connection is None:
        return None
    try:
        return client.request(connection, kind) or None
    except OSError:
        return None
    finally:
        connection.close()


def status(root: Path) -> DaemonState:
    """Whether a daemon serves ``root``, and what it says about itself."""
    socket_path = str(root / ".git" / "librarian" / SOCKET_NAME)
    try:
        state = _state_fd(root)
    except (FileNotFoundError, UsageError):
        return DaemonState(str(root), socket_path, False)
    try:
        present = socket_inode(state) is not None
        answer = _ask(root, b"status") if present else None
    finally:
        os.close(state)
    if answer is None:
        return DaemonState(str(root), socket_path, False,
                           note="a stale socket (no server)" if present else None)
    if answer == b"stale":
        return DaemonState(str(root), socket_path, False,
                           note="it was running older code and has exited")
    if not answer.startswith(b"status "):
        return DaemonState(str(root), socket_path, False,
                           note="it runs under other settings: " + answer.decode("ascii",
                                                                                 "replace"))
    values = dict(part.split("=", 1) for part in answer.decode("ascii").split()[1:])
    return DaemonState(str(root), socket_path, True, int(values["pid"]),
                       float(values["started"]), float(values["idle"]), int(values["served"]))


def start(root: Path, idle: float = DEFAULT_IDLE) -> DaemonState:
    """Start the daemon of ``root`` unless one runs; the state once it listens."""
    if not supported():
        raise UsageError("the daemon needs a system with fork and SO_PEERCRED (Linux)",
                         hint="every command works without it")
    if idle < 0:
        raise UsageError("--idle must be 0 (never) or a number of seconds")
    current = status(root)
    if current.running:
        return current
    os.close(_state_fd(root, create=True))
    read_end, write_end = os.pipe()
    package_parent = Path(__file__).resolve().parent.parent.parent
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "librarian.cli.daemon_main", str(root), repr(idle),
             str(write_end)],
            cwd=package_parent, pass_fds=(write_end,), start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        os.close(write_end)
    try:
        line = _read_ready(read_end)
    finally:
        os.close(read_end)
    if not line.startswith("ready "):
        process.kill()
        process.wait()
        reason = line.removeprefix("error ") or "no answer"
        raise ConflictError(f"the daemon did not start: {reason}",
                            hint=f"run `python -m librarian.cli.daemon_main {root} 0` to see why")
    return status(root)


def _read_ready(fd: int) -> str:
    deadline, data = time.monotonic() + _START_TIMEOUT, b""
    while not data.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data.decode("utf-8", "replace").strip()


def stop(root: Path) -> DaemonState:
    """Stop the daemon of ``root`` (nothing to do when none runs); removes a stale socket
    (one nobody listens on, owned by you). The state before stopping, with a note."""
    current = status(root)
    if not current.running:
        if current.note == "a stale socket (no server)":
            state = _state_fd(root)
            try:
                if socket_inode(state) is not None:
                    os.unlink(SOCKET_NAME, dir_fd=state)
            finally:
                os.close(state)
            return DaemonState(current.library, current.socket, False,
                               note="removed a stale socket")
        return current
    state = _state_fd(root)
    try:
        _ask(root, b"stop")
        deadline = time.monotonic() + 5
        while socket_inode(state) is not None and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        os.close(state)
    return DaemonState(current.library, current.socket, False, current.pid,
                       note="stopped")


def serve(state_fd: int, idle: float, run: Runner, ready: int | None = None) -> None:
    """Bind the library's socket, say ``ready PID`` on the ``ready`` descriptor (the
    starting ``daemon start`` reads it), and serve until one of the ends ``server`` names."""
    server = Server(state_fd, idle, run)
    try:
        server.bind()
    except OSError as exc:
        if ready is not None:
            os.write(ready, f"error {exc}\n".encode())
            os.close(ready)
        raise
    if ready is not None:
        os.write(ready, b"ready %d\n" % os.getpid())
        os.close(ready)
    server.loop()
