"""The console entry's fast path: hand the command line to the library's daemon, if one runs.

``forward`` returns the command's exit code, or None when the command must run in this
process exactly as without a daemon: no library named, no socket, a socket that is not
this user's, a server that is stale, busy past ``ACCEPT_TIMEOUT``, or gone — anything that
happens *before the server takes the request*. The hand-over is two steps (the server
answers ``ready``; the client answers ``go``, and only then does the server fork), so a
request is run once: by the server's child, or, when the client gave up first or the
server declines even after ``go`` (its fork failed), in-process.

What the child gets is this process's: the arguments, the environment, the umask, the
current directory and fds 0, 1 and 2 (passed as descriptors: output, pipes, terminals and
``--json`` behave exactly as in-process). SIGINT, SIGTERM, SIGHUP and SIGQUIT received here
go to the child's process group; a child killed by a signal kills this process with the
same signal, so a shell reports what it would have reported.

``_socket`` rather than ``socket`` and ``_signal`` rather than ``signal``: the wrapper
modules (and the enum, functools and collections they import) cost ~3 and ~4 ms of
imports per command (``python -X importtime``), a tenth of what this path costs in all.
"""

from __future__ import annotations

import _socket
import os
import sys

from librarian.daemon.wire import (
    ACCEPT_TIMEOUT,
    FORWARDED,
    IN_PROCESS,
    SOCKET_NAME,
    command_of,
    encode_request,
    library_root,
    open_state_dir,
    socket_inode,
)

TYPE_CHECKING = False  # typing itself is not imported here (see above)
if TYPE_CHECKING:
    import signal
else:
    import _signal as signal  # the C module: no enum wrappers (see above)

_SUPPORTED = hasattr(_socket, "AF_UNIX") and hasattr(_socket, "SO_PEERCRED")
_CWD_FLAGS = getattr(os, "O_PATH", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)) | getattr(
    os, "O_CLOEXEC", 0)
#: Signals a shell reports by name when they end a process; others end the client with
#: 128 + n (no core file of the client for the child's crash).
_RERAISED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGKILL", "SIGPIPE", "SIGALRM", "SIGUSR1",
             "SIGUSR2")


class Lost(Exception):
    """The server closed the connection after taking the request, without an outcome."""


class NotRun(Exception):
    """The server declined after ``go``: nothing ran, the command runs in-process."""


def forward(args: list[str]) -> int | None:
    """Run ``args`` through the daemon of the library they name: the exit code, or None
    (run in-process)."""
    if (not _SUPPORTED or os.environ.get("LIBRARIAN_NO_DAEMON")
            or command_of(args) in IN_PROCESS):
        return None
    try:
        root = library_root(args)
        if root is None:
            return None
        for fd in (0, 1, 2):
            os.fstat(fd)  # a closed one would be taken by the open below: run in-process
        here = os.open(".", _CWD_FLAGS)
    except OSError:
        return None
    try:
        connection = connect(root, here)
        if connection is None:
            return None
        try:
            previous = _hand_over(connection, args, here)
            if previous is None:
                return None
            try:
                return _outcome(connection)
            except NotRun:
                _restore(previous)
                return None
            except (Lost, OSError):
                sys.stderr.write("librarian: error: the daemon went away before the command "
                                 "finished (hint: `librarian status` shows the library; "
                                 "`librarian recover` finishes an interrupted change)\n")
                return 1
        finally:
            connection.close()
    except OSError:
        return None
    finally:
        os.close(here)


def connect(root: str, here: int) -> _socket.socket | None:
    """A connection to the daemon of ``root``, whose peer is this user; None when there is
    no socket. Connects by the bare name after ``fchdir`` into ``.git/librarian``;
    ``here`` is the directory to return to."""
    state = open_state_dir(root)
    try:
        if socket_inode(state) is None:
            return None
        connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            connection.settimeout(ACCEPT_TIMEOUT)
            os.fchdir(state)
            try:
                connection.connect(SOCKET_NAME)
            finally:
                _return_to(here)
            creds = connection.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
            if int.from_bytes(creds[4:8], sys.byteorder) != os.getuid():
                raise PermissionError("the daemon's socket is served by another user")
        except BaseException:
            connection.close()
            raise
        return connection
    finally:
        os.close(state)


def _return_to(here: int) -> None:
    try:
        os.fchdir(here)
    except OSError as exc:  # running on in the wrong directory is the one thing not allowed
        sys.stderr.write(f"librarian: error: cannot return to the current directory: {exc}\n")
        os._exit(1)


def request(connection: _socket.socket, kind: bytes, args: list[str] | None = None) -> bytes:
    """Send one request and read the first line of the answer."""
    connection.sendall(encode_request(kind, args))
    return read_line(connection)


def read_line(connection: _socket.socket) -> bytes:
    """One line from the connection ('' at end of stream). Reads a byte at a time: the
    answers are a few short lines, and nothing past a line may be consumed."""
    line = bytearray()
    while not line.endswith(b"\n"):
        byte = connection.recv(1)
        if not byte:
            return bytes(line)
        line += byte
    return bytes(line[:-1])


Handlers = dict[int, object]


def _hand_over(connection: _socket.socket, args: list[str], here: int) -> Handlers | None:
    """Send the request; once the server is ready, put the signal handlers in place and
    say ``go`` with the descriptors: the previous handlers, or None (not taken)."""
    answer = request(connection, b"run", args)
    if answer != b"ready":
        return None  # declined (settings), stale (the server exits), or gone

    def pass_on(signum: int, _frame: object) -> None:
        try:
            connection.send(b"signal %d\n" % signum)
        except OSError:
            pass

    numbers = [getattr(signal, name) for name in FORWARDED]
    previous: Handlers = {number: signal.signal(number, pass_on) for number in numbers}
    rights = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (here, 0, 1, 2))
    try:
        connection.sendmsg([b"go\n"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)])
    except OSError:
        _restore(previous)  # in-process after all: as it was
        raise
    return previous


def _restore(previous: Handlers) -> None:
    for number, handler in previous.items():
        signal.signal(number, handler)  # type: ignore[arg-type]


def _outcome(connection: _socket.socket) -> int:
    connection.settimeout(None)
    answer = read_line(connection)
    kind, _, number = answer.partition(b" ")
    if kind == b"exit" and number.isdigit():
        return int(number)
    if kind == b"signal" and number.isdigit():
        return _ended_by(int(number))
    if kind == b"declined":
        raise NotRun(answer)
    raise Lost(answer)


def _ended_by(signum: int) -> int:
    """End this process as the child was ended: by the same signal where a shell reports
    it by name, else exit 128 + n."""
    if signum in {getattr(signal, name) for name in _RERAISED if hasattr(signal, name)}:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    return 128 + signum
