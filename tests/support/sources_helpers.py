"""Upstream repositories for the sources/update tests, written with dulwich objects so a
test can commit anything git can hold (symlinks, submodules, ``..`` names, huge files)
without the git binary; and loopback servers (git daemon, dulwich's HTTP smart server)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

from support.helpers import cli, recipe_yaml, run_main, skill_md

MODE_FILE, MODE_EXEC, MODE_LINK, MODE_GITLINK = 0o100644, 0o100755, 0o120000, 0o160000


class Upstream:
    """A bare repository whose ``main`` is rewritten from a dict of files per commit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True)
        Repo.init_bare(str(path)).close()
        self.files: dict[str, tuple[bytes, int]] = {}
        self.commits: list[str] = []
        #: a directory's mode other than git's 040000 (git's fsck only reports one)
        self.dir_modes: dict[str, int] = {}

    @property
    def url(self) -> str:
        return str(self.path)

    def skill(self, path: str, body: str = "Do it.\n", name: str | None = None) -> Upstream:
        name = name or path.rsplit("/", 1)[-1]
        self.files[f"{path}/SKILL.md"] = (skill_md(name, body=body), MODE_FILE)
        return self

    def recipe(self, path: str, script: str = "echo hi\n") -> Upstream:
        name = path.rsplit("/", 1)[-1]
        self.files[f"{path}/recipe.yaml"] = (recipe_yaml(name), MODE_FILE)
        self.files[f"{path}/run.sh"] = (b"#!/bin/sh\n" + script.encode(), MODE_EXEC)
        return self

    def put(self, path: str, data: bytes, mode: int = MODE_FILE) -> Upstream:
        self.files[path] = (data, mode)
        return self

    def remove(self, prefix: str) -> Upstream:
        for key in [k for k in self.files if k == prefix or k.startswith(prefix + "/")]:
            del self.files[key]
        return self

    def commit(self, message: str = "change") -> str:
        with Repo(str(self.path)) as repo:
            store = repo.object_store
            nested: dict[str, Any] = {}
            for path, (data, mode) in self.files.items():
                node = nested
                parts = path.split("/")
                for part in parts[:-1]:
                    node = node.setdefault(part, {})
                node[parts[-1]] = (data, mode)

            def build(node: dict[str, Any], at: str = "") -> bytes:
                tree = Tree()
                for name, child in node.items():
                    if isinstance(child, dict):
                        path = f"{at}/{name}" if at else name
                        tree.add(name.encode(), self.dir_modes.get(path, 0o040000),
                                 build(child, path))
                    else:
                        data, mode = child
                        if mode == MODE_GITLINK:
                            tree.add(name.encode(), mode, data)  # data is a commit id
                            continue
                        blob = Blob.from_string(data)
                        store.add_object(blob)
                        tree.add(name.encode(), mode, blob.id)
                store.add_object(tree)
                return tree.id

            commit = Commit()
            commit.tree = build(nested)
            commit.parents = [repo.refs[b"refs/heads/main"]] if self.commits else []
            commit.author = commit.committer = b"Upstream <up@example.org>"
            commit.author_time = commit.commit_time = int(time.time())
            commit.author_timezone = commit.commit_timezone = 0
            commit.message = message.encode()
            store.add_object(commit)
            repo.refs[b"refs/heads/main"] = commit.id
            repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
        self.commits.append(commit.id.decode())
        return commit.id.decode()


def install(capsys: Any, library: Path, upstream: Upstream, source: str = "team") -> None:
    """Subscribe ``library`` to ``upstream`` and install it (both must succeed)."""
    added = run_main(capsys, "--library", str(library), "source", "add", source, upstream.url)
    assert added.code == 0, added.err
    assert cli(capsys, library, "update").code == 0


def edit_source(library: Path, source: str, *, commit: bool = True, **fields: Any) -> None:
    """Hand-edit ``source`` in library.yaml (``url=…``, ``trust=(…)``; a new source needs a
    url), as a user would in an editor; with ``commit``, commit it with plain git (dulwich's
    porcelain), with no librarian trailers."""
    from dataclasses import replace

    from dulwich import porcelain

    from librarian.formats.config import SourceConfig, dump_library_config, load_library_config

    path = library / "library.yaml"
    config = load_library_config(path.read_bytes())
    sources = dict(config.sources)
    sources[source] = replace(sources.get(source) or SourceConfig(url=fields["url"]), **fields)
    path.write_bytes(dump_library_config(replace(config, sources=sources)))
    if commit:
        with Repo(str(library)) as repo:
            porcelain.add(repo, paths=[str(path)])
            porcelain.commit(repo, message=f"edit source {source} by hand",
                             author=b"User <user@example.org>",
                             committer=b"User <user@example.org>")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 60.0) -> bool:
    """True once ``process`` listens on ``port``; False if it exited first (another test
    took the port between ``free_port`` and its bind: the caller tries another)."""
    deadline = time.monotonic() + timeout  # a bound on a hang, not a measure of speed
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return process.poll() is None
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


@contextlib.contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """``git daemon`` serving every repository under ``base``; yields git://… base URL."""
    git = shutil.which("git")
    assert git is not None
    for _attempt in range(5):
        port = free_port()
        process = subprocess.Popen(
            [git, "daemon", "--reuseaddr", f"--base-path={base}", "--export-all",
             f"--port={port}", "--listen=127.0.0.1", str(base)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        if _wait_for_port(port, process):
            break
        process.wait(10)
    else:
        raise RuntimeError("git daemon found no free port")
    try:
        yield f"git://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


@contextlib.contextmanager
def http_server(repos: dict[str, Path]) -> Iterator[str]:
    """dulwich's smart HTTP server for ``repos`` (URL path -> repository); yields the
    http://… base URL."""
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    from dulwich.server import DictBackend
    from dulwich.web import make_wsgi_chain

    opened = {name.encode(): Repo(str(path)) for name, path in repos.items()}
    app = make_wsgi_chain(DictBackend(opened))  # type: ignore[arg-type]

    class Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = make_server("127.0.0.1", 0, app, handler_class=Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        for repo in opened.values():
            repo.close()


#: The transports a source URL can use, for tests parametrized over each.
TRANSPORTS = ("local", "file", "git-daemon", "http")


@contextlib.contextmanager
def served_url(kind: str, upstream: Upstream) -> Iterator[str]:
    """The URL of ``upstream`` (at ``…/team.git``) over the transport ``kind`` (one of
    ``TRANSPORTS``): its path, ``file://``, a real ``git daemon`` or git's smart HTTP."""
    if kind == "local":
        yield upstream.url
    elif kind == "file":
        yield "file://" + upstream.url
    elif kind == "git-daemon":
        if shutil.which("git") is None:
            import pytest

            pytest.skip("the git binary is not installed")
        with git_daemon(upstream.path.parent) as base:
            yield f"{base}/{upstream.path.name}"
    else:
        with http_server({f"/{upstream.path.name}": upstream.path}) as base:
            yield f"{base}/{upstream.path.name}"
