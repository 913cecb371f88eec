"""Run librarian's command line, SIGKILLed just before its K-th write step.

``python tests/support/killer.py ARGS…`` with ``KILL_AT=K``: an audit hook counts every operation
that changes the file system (an open for writing, a rename, an unlink, a mkdir, a rmdir,
a chmod, a truncate) and kills the process with SIGKILL just before the K-th, exactly as
an outside kill would land there. ``KILL_AT=0`` kills nothing and prints the count of
steps on stderr as ``write-steps: N`` (the command's own output comes first).
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_EVENTS = frozenset({"os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.chmod",
                     "os.truncate", "os.link", "os.symlink", "shutil.rmtree"})
_count = 0
_kill_at = int(os.environ.get("KILL_AT", "0"))


def _is_write(event: str, args: tuple[Any, ...]) -> bool:
    if event in _EVENTS:
        return True
    if event == "open" and len(args) >= 3:
        mode, flags = args[1], args[2]
        if isinstance(mode, str):
            return any(c in mode for c in "wax+")
        return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
    return False


def _hook(event: str, args: tuple[Any, ...]) -> None:
    global _count
    if _is_write(event, args):
        _count += 1
        if _count == _kill_at:
            os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    sys.addaudithook(_hook)
    from librarian.cli.main import main

    code = main(sys.argv[1:])
    if _kill_at == 0:
        sys.stderr.write(f"write-steps: {_count}\n")
    sys.exit(code)
