"""A team's git host on loopback for the tests of sync, clone, the merge driver and the
server's gate: a bare repository behind a real ``git daemon --enable=receive-pack`` or
behind git's own smart-HTTP backend (``git http-backend`` under a small CGI server)."""

from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from support.helpers import git, git_env
from support.sources_helpers import _wait_for_port, free_port

GIT = shutil.which("git")


@contextlib.contextmanager
def git_daemon_rw(base: Path) -> Iterator[str]:
    """``git daemon`` serving (and accepting pushes to) every repository under ``base``;
    yields the git://… base URL."""
    assert GIT is not None
    while True:  # another test may take the port between free_port and the bind
        port = free_port()
        process = subprocess.Popen(
            [GIT, "daemon", "--reuseaddr", f"--base-path={base}", "--export-all",
             "--enable=receive-pack", f"--port={port}", "--listen=127.0.0.1", str(base)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=git_env())
        if _wait_for_port(port, process):
            break
        process.wait(10)
    try:
        yield f"git://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


class _Backend(http.server.BaseHTTPRequestHandler):
    """Every request handed to ``git http-backend`` as a CGI call."""

    root: Path

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _cgi(self) -> None:
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        env = git_env({
            "GIT_PROJECT_ROOT": str(self.root), "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command, "PATH_INFO": path, "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)), "REMOTE_USER": "team", "REMOTE_ADDR": "127.0.0.1",
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
        })
        assert GIT is not None
        done = subprocess.run([GIT, "http-backend"], input=body, env=env, capture_output=True,
                              check=False)
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.split(b"\r\n"):
            key, _, value = line.decode("latin-1").partition(":")
            if key.lower() == "status":
                status = int(value.strip().split()[0])
            elif key:
                headers.append((key, value.strip()))
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = _cgi
    do_POST = _cgi


@contextlib.contextmanager
def http_backend(base: Path) -> Iterator[str]:
    """git's smart-HTTP backend for every repository under ``base`` (pushes allowed: the
    requests carry a user); yields the http://… base URL."""
    handler = type("Backend", (_Backend,), {"root": base})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def bare_with_library(base: Path, name: str = "team.git") -> Path:
    """A bare repository under ``base`` holding one freshly initialised library."""
    from librarian.agents.claude_manifests import GENERATED
    from librarian.ops.create import init_library

    seed = base.parent / f"{name}-seed"
    init_library(seed, "team", GENERATED)
    bare = base / name
    git(base, "init", "--bare", "-q", "-b", "main", str(bare))
    git(seed, "push", "-q", str(bare), "main")
    shutil.rmtree(seed)
    return bare


def librarian(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m librarian ARGS`` in ``cwd`` without inherited GIT_* variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run([sys.executable, "-m", "librarian", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def act(library: Path, *args: str) -> int:
    """``librarian --library LIBRARY ARGS`` in this process (faster than a process: the
    steps that set a test up); its exit code."""
    from librarian.cli.main import main

    try:
        return int(main(["--library", str(library), *args]))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
