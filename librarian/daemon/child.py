"""The child of the daemon's server, forked on the client's ``go``: it takes the client's
place (directory, umask, environment, fds 0-2, argv), runs the command line as a fresh
process would, and ends with ``os._exit``: nothing of the server's own state or exit
path ever runs in a child.
"""

from __future__ import annotations

import atexit
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import NoReturn

#: What the child runs: ``cli.main.main``, handed over by the command line.
Runner = Callable[[list[str]], int]


def run_child(fields: dict[bytes, list[bytes]], fds: list[int], run: Runner,
              report: int) -> NoReturn:
    """Run the command line in this (forked) process and exit with its status, which it
    first writes to ``report`` (the server answers the client from it)."""
    code = 1
    try:
        code = _become(fields, fds, run)
    except BaseException:  # noqa: B036  (a child never returns into the server's loop)
        try:
            traceback.print_exc()
        finally:
            os._exit(1)
    try:
        os.write(report, b"%d\n" % code)
    except OSError:
        pass  # the server answers from the reaped status instead
    os._exit(code)


def _become(fields: dict[bytes, list[bytes]], fds: list[int], run: Runner) -> int:
    """In the child: take the client's place, run the command line, its exit code."""
    cwd, *stdio = fds
    os.fchdir(cwd)
    os.close(cwd)
    os.umask(int(fields[b"umask"][0]))
    os.environ.clear()
    for entry in fields.get(b"env", []):
        key, _, value = entry.partition(b"=")
        os.environb[key] = value
    time.tzset()
    for target, fd in enumerate(stdio):
        os.dup2(fd, target)
    for fd in stdio:
        if fd > 2:
            os.close(fd)
    sys.argv = [os.fsdecode(arg) for arg in fields.get(b"arg", [])]
    _fresh_stdio()
    try:
        code = _exit_code(run(sys.argv[1:]))
    except SystemExit as exc:
        code = _exit_code(exc.code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120  # what the interpreter reports when its final flush fails
    return code


#: The server's own streams, kept referenced so that they are never flushed (nor closed)
#: into the client's descriptors.
_server_streams: list[object] = []


def _fresh_stdio() -> None:
    """New text streams over fds 0-2, built as the interpreter builds them at start. The
    server's were opened on /dev/null, and a buffered file remembers that its descriptor
    was seekable: on a terminal, click's text-writer check then calls tell() (ESPIPE)."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        _server_streams.append(old)
        line_buffered = fd == 2 or os.isatty(fd)
        stream = open(fd, "r" if fd == 0 else "w", buffering=1 if line_buffered else -1,
                      encoding=getattr(old, "encoding", None) or "utf-8",
                      errors=getattr(old, "errors", None) or "strict",
                      newline="\n", closefd=False)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _exit_code(value: object) -> int:
    """The exit status ``SystemExit(value)`` gives a Python process."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    sys.stderr.write(f"{value}\n")
    return 1
