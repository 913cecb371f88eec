"""The fork server of one library: one child per command, each a fresh process.

The server has imported the command table and the library's modules; it never runs a
command itself, so a child starts from the state a new process would have after those
imports, and the library's lock, journal and recovery cover a killed child as they cover
any process. Per request (``run``): check the peer (same user, ``SO_PEERCRED``), the
settings (different: ``declined``, the client runs in-process) and the code fingerprint
(different: ``stale``, stop taking requests and exit once the running children are
done); answer ``ready``. The client answers ``go`` with its current directory and fds
0-2 attached (descriptors travel only to a server that has just answered, so a stalled
server never holds a caller's pipes open); then fork: the child takes the client's
place and runs the command line (``child``). Once its output is flushed and its exit
handlers have run, the child writes its exit code to a pipe and the client is answered
``exit N`` then, not after the kernel has torn the child down (2-7 ms); a child that
dies first is answered from its reaped status, ``exit N`` or ``signal N``. A client
that disappears before ``go`` leaves nothing behind; one that disappears later gets its
child SIGTERMed (as a killed in-process command would have stopped).

The server exits after ``idle`` seconds without a command (0: never), on ``stop``,
SIGTERM or SIGINT, when its socket is no longer the one it bound (removed, replaced, the
library deleted), or when it is stale.
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import NoReturn

from librarian.daemon.child import Runner, run_child
from librarian.daemon.wire import (
    ACCEPT_TIMEOUT,
    FORWARDED,
    PROTOCOL,
    SOCKET_NAME,
    code_fingerprint,
    decode_fields,
    settings,
    socket_inode,
)

_MAX_REQUEST = 4 << 20  # arguments and environment: far above any ARG_MAX
_FDS = 4  # cwd, 0, 1, 2


@dataclass
class _Connection:
    sock: socket.socket
    fd: int  # the socket's descriptor: the key in Server.connections
    opened: float
    data: bytearray = field(default_factory=bytearray)
    fds: list[int] = field(default_factory=list)  # arrive with go: cwd, 0, 1, 2
    fields: dict[bytes, list[bytes]] | None = None  # a run request answered ready
    child: int | None = None  # forked on go: running until reaped
    done: int | None = None  # the child's report pipe: its exit code, once flushed
    reported: bool = False  # answered from that report (counted as served then)


class Server:
    def __init__(self, state_fd: int, idle: float, run: Runner) -> None:
        self.state_fd, self.idle, self.run = state_fd, idle, run
        self.fingerprint, self.settings = code_fingerprint(), settings()
        self.selector = selectors.DefaultSelector()
        self.connections: dict[int, _Connection] = {}
        self.children: dict[int, _Connection] = {}
        self.started = self.last = time.time()
        self.served = 0
        self.listener: socket.socket | None = None
        self.inode: int | None = None
        self.wake_r, self.wake_w = os.pipe()
        self.stopping = False

    # -- set-up and the loop --------------------------------------------------------------

    def bind(self) -> None:
        """Listen on a temporary name, then rename it over ``daemon.sock``: a client never
        sees a socket nobody listens on."""
        os.fchdir(self.state_fd)
        temporary = f"{SOCKET_NAME}.{os.getpid()}"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        previous = os.umask(0o077)
        try:
            listener.bind(temporary)
        finally:
            os.umask(previous)
        listener.listen(64)
        os.rename(temporary, SOCKET_NAME, src_dir_fd=self.state_fd, dst_dir_fd=self.state_fd)
        listener.setblocking(False)
        self.listener, self.inode = listener, socket_inode(self.state_fd)
        self.selector.register(listener, selectors.EVENT_READ)
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)
        self.selector.register(self.wake_r, selectors.EVENT_READ)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._stop_signal)
        signal.signal(signal.SIGINT, self._stop_signal)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def _stop_signal(self, _signum: int, _frame: object) -> None:
        self.stopping = True  # acted on by the loop, never in the middle of a step

    def loop(self) -> None:
        while self.listener is not None or self.children:
            if self.stopping:
                self.shut()
            for key, _ in self.selector.select(timeout=1.0):
                if key.fileobj is self.listener:
                    self.accept()
                elif key.fileobj == self.wake_r:
                    while True:
                        try:
                            if not os.read(self.wake_r, 512):
                                break
                        except BlockingIOError:
                            break
                else:
                    connection: _Connection = key.data
                    if self.connections.get(connection.fd) is not connection:
                        continue  # dropped by an earlier event of this round
                    if key.fileobj == connection.done:
                        self.reported(connection)
                        continue
                    try:
                        self.readable(connection)
                    except OSError:  # a peer gone mid-exchange: that connection only
                        self.drop(connection)
            self.reap()
            self.tick()

    def tick(self) -> None:
        now = time.time()
        for connection in list(self.connections.values()):
            if connection.child is None and now - connection.opened > ACCEPT_TIMEOUT * 2:
                self.drop(connection)  # never said go: the client runs it, or gave up
        if self.listener is None:
            return
        if socket_inode(self.state_fd) != self.inode:
            self.shut(unlink=False)  # removed or replaced: no longer ours to serve
        elif (self.idle and not self.children and not self.connections
              and now - self.last > self.idle):
            self.shut()

    def shut(self, unlink: bool = True) -> None:
        """Take no more requests; the loop ends when the running children are reaped."""
        if self.listener is None:
            return
        if unlink and socket_inode(self.state_fd) == self.inode:
            os.unlink(SOCKET_NAME, dir_fd=self.state_fd)
        self.selector.unregister(self.listener)
        self.listener.close()
        self.listener = None

    # -- connections ----------------------------------------------------------------------

    def accept(self) -> None:
        assert self.listener is not None
        try:
            sock, _ = self.listener.accept()
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        except BlockingIOError:
            return
        except OSError:
            return  # gone before it could be asked who it is
        if int.from_bytes(creds[4:8], sys.byteorder) != os.getuid():
            sock.close()  # another user: refused before a byte is read
            return
        sock.setblocking(False)
        connection = _Connection(sock, sock.fileno(), time.time())
        self.connections[connection.fd] = connection
        self.selector.register(sock, selectors.EVENT_READ, connection)

    def drop(self, connection: _Connection) -> None:
        if self.connections.get(connection.fd) is not connection:
            return
        self.selector.unregister(connection.sock)
        del self.connections[connection.fd]
        connection.sock.close()
        self._close_fds(connection)
        self._close_report(connection)

    def reported(self, connection: _Connection) -> None:
        """The child's exit code, written once its output is flushed and its exit
        handlers have run: the client is answered then, not after the kernel has torn
        down a copy of the server's address space (2-7 ms); the reap later finds the
        connection answered. Nothing (the child died first): the reap answers."""
        assert connection.done is not None
        try:
            report = os.read(connection.done, 64)
        except OSError:
            report = b""
        self._close_report(connection)
        code = report.strip()
        if report.endswith(b"\n") and code.isdigit():
            connection.reported = True
            self.served += 1
            self._answer(connection, b"exit " + code)

    def _close_report(self, connection: _Connection) -> None:
        if connection.done is not None:
            self.selector.unregister(connection.done)
            os.close(connection.done)
            connection.done = None

    def readable(self, connection: _Connection) -> None:
        try:
            data, ancillary, _, _ = connection.sock.recvmsg(
                65536, socket.CMSG_SPACE(_FDS * 4))
        except BlockingIOError:
            return
        except OSError:
            data, ancillary = b"", []
        for level, kind, rights in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                usable = len(rights) - len(rights) % 4
                connection.fds += [int.from_bytes(rights[i:i + 4], sys.byteorder)
                                   for i in range(0, usable, 4)]
        if not data:
            self._gone(connection)
            return
        connection.data += data
        if connection.fields is not None:
            self._control(connection)
        else:
            self._request(connection)

    def _gone(self, connection: _Connection) -> None:
        if connection.child is not None:
            _signal_group(connection.child, signal.SIGTERM)  # the client was killed
        self.drop(connection)

    def _control(self, connection: _Connection) -> None:
        """After ``ready``: ``go`` (with the four descriptors) forks the child; later,
        ``signal N`` is passed on to its process group."""
        *lines, rest = connection.data.split(b"\n")
        connection.data = bytearray(rest)
        forwarded = {getattr(signal, name) for name in FORWARDED}
        for line in lines:
            word, _, number = line.partition(b" ")
            if word == b"go" and connection.child is None:
                if len(connection.fds) != _FDS:
                    self._answer(connection, b"declined descriptors")
                    return
                self._fork(connection)
            elif (word == b"signal" and number.isdigit() and int(number) in forwarded
                  and connection.child is not None):
                _signal_group(connection.child, int(number))

    def _request(self, connection: _Connection) -> None:
        header, newline, payload = bytes(connection.data).partition(b"\n")
        if not newline:
            if len(header) > 256:
                self.drop(connection)
            return
        parts = header.split(b" ")
        if len(parts) != 3 or parts[0] != PROTOCOL or not parts[2].isdigit():
            self._answer(connection, b"declined protocol")
            return
        length = int(parts[2])
        if length > _MAX_REQUEST:
            self._answer(connection, b"declined size")
            return
        if len(payload) < length:
            return
        fields = decode_fields(payload[:length])
        if fields.get(b"set") != [self.settings]:  # first: the import path is in both
            self._answer(connection, b"declined settings")
            return
        if fields.get(b"fp") != [self.fingerprint]:
            self._answer(connection, b"stale")
            self.shut()
            return
        if parts[1] == b"stop":
            self._answer(connection, b"stopping %d" % os.getpid())
            self.shut()
        elif parts[1] == b"status":
            self._answer(connection, b"status pid=%d started=%.3f idle=%g served=%d running=%d"
                         % (os.getpid(), self.started, self.idle, self.served,
                            len(self.children)))
        elif parts[1] == b"run" and b"umask" in fields and self.listener is not None:
            connection.fields, connection.data = fields, bytearray(payload[length:])
            connection.sock.setblocking(True)
            connection.sock.sendall(b"ready\n")
            connection.sock.setblocking(False)
            if connection.data:
                self._control(connection)
        else:
            self._answer(connection, b"declined request")

    def _answer(self, connection: _Connection, line: bytes) -> None:
        try:
            connection.sock.setblocking(True)
            connection.sock.sendall(line + b"\n")
        except OSError:
            pass
        self.drop(connection)

    # -- children -------------------------------------------------------------------------

    def _fork(self, connection: _Connection) -> None:
        """The client said go: from here on it waits for this command's outcome. A fork
        that fails is ``declined``: nothing ran, and the client runs it in-process."""
        assert connection.fields is not None
        try:
            report_r, report_w = os.pipe()  # not inherited across an exec
        except OSError:
            self._answer(connection, b"declined fork")
            return
        try:
            pid = os.fork()
        except OSError:
            os.close(report_r)
            os.close(report_w)
            self._answer(connection, b"declined fork")
            return
        if pid == 0:
            os.close(report_r)
            self._child(connection, connection.fields, report_w)
        os.close(report_w)
        try:
            os.setpgid(pid, pid)  # also done by the child: whichever runs first
        except OSError:
            pass
        self._close_fds(connection)
        connection.child = pid
        connection.done = report_r
        self.selector.register(report_r, selectors.EVENT_READ, connection)
        self.children[pid] = connection

    def _child(self, connection: _Connection, fields: dict[bytes, list[bytes]],
               report: int) -> NoReturn:
        try:
            os.setpgid(0, 0)
            signal.set_wakeup_fd(-1)
            for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
                signal.signal(number, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self.selector.close()
            for fd in (self.wake_r, self.wake_w, self.state_fd):
                os.close(fd)
            if self.listener is not None:
                self.listener.close()
            for other in self.connections.values():
                other.sock.close()
                if other.done is not None:
                    os.close(other.done)  # another child's report pipe
                if other is not connection:
                    self._close_fds(other)
        except BaseException:  # noqa: B036  (nothing of the server may run on in a child)
            try:
                traceback.print_exc()
            finally:
                os._exit(1)
        run_child(fields, connection.fds, self.run, report)

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            connection = self.children.pop(pid, None)
            self.last = time.time()
            if connection is None or connection.reported:
                continue
            self.served += 1
            if self.connections.get(connection.fd) is not connection:
                continue
            if os.WIFSIGNALED(status):
                line = b"signal %d" % os.WTERMSIG(status)
            else:
                line = b"exit %d" % os.waitstatus_to_exitcode(status)
            self._answer(connection, line)

    @staticmethod
    def _close_fds(connection: _Connection) -> None:
        for fd in connection.fds:
            os.close(fd)
        connection.fds = []


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except OSError:
        pass  # already gone (it is reaped by the loop)
