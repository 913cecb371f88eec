"""A publishing upstream for the signed-release tests: an ``Upstream`` (bare, written with
dulwich) that can also carry release tags, honest or forged, laid out exactly as
``librarian release`` and ``git tag -s`` write them."""

from __future__ import annotations

import shutil
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from dulwich.objects import ShaFile
from dulwich.repo import Repo

from librarian.core.digest import content_digest
from librarian.trust.keys import SigningKey
from librarian.trust.statement import dump_statement, new_statement
from librarian.trust.tag import signed_tag, tag_payload
from support.helpers import tree_snapshot
from support.sources_helpers import Upstream

TAGGER = b"Publisher <pub@example.org> 1764579600 +0000"
_MANIFESTS = ("SKILL.md", "recipe.yaml")


class Publisher(Upstream):
    def item_digests(self) -> dict[str, str]:
        """upstream path -> digest of every item in the current files."""
        items = {p.rsplit("/", 1)[0] for p in self.files if p.rsplit("/", 1)[-1] in _MANIFESTS}
        out = {}
        for item in sorted(items):
            files = [(p[len(item) + 1:], mode == 0o100755, data)
                     for p, (data, mode) in sorted(self.files.items())
                     if p.startswith(item + "/")]
            out[item] = content_digest(files)
        return out

    def statement(self, version: int, *, commit: str | None = None,
                  items: dict[str, str] | None = None, now: datetime | None = None,
                  expires_days: int = 90) -> bytes:
        return dump_statement(new_statement(
            version, commit or self.commits[-1],
            self.item_digests() if items is None else items, now=now,
            expires_days=expires_days))

    def release(self, key: SigningKey | None, version: int, *, name: str | None = None,
                commit: str | None = None, message: bytes | None = None,
                **statement: Any) -> str:
        """Tag ``commit`` (default: the last) as ``refs/tags/librarian-release/<version>``
        (or ``name``); signed by ``key`` unless None; the message is the honest statement
        unless given."""
        target = commit or self.commits[-1]
        ref_name = f"librarian-release/{version}"
        body = message if message is not None else self.statement(version, commit=target,
                                                                  **statement)
        tag_name = name or ref_name
        raw = (signed_tag(target, tag_name, TAGGER, body, key) if key is not None
               else tag_payload(target, tag_name, TAGGER, body))
        return self.put_tag(ref_name, raw)

    def put_tag(self, ref_name: str, raw: bytes) -> str:
        with Repo(str(self.path)) as repo:
            obj = ShaFile.from_raw_string(4, raw)
            repo.object_store.add_object(obj)
            repo.refs[b"refs/tags/" + ref_name.encode()] = obj.id
        return obj.id.decode()

    def tag_bytes(self, ref_name: str) -> bytes:
        with Repo(str(self.path)) as repo:
            sha = repo.refs[b"refs/tags/" + ref_name.encode()]
            return bytes(repo.object_store[sha].as_raw_string())

    def delete_tag(self, ref_name: str) -> None:
        with Repo(str(self.path)) as repo:
            del repo.refs[b"refs/tags/" + ref_name.encode()]


def library_refs(library: Path) -> dict[bytes, bytes]:
    with Repo(str(library)) as repo:
        return {bytes(k): bytes(v) for k, v in repo.get_refs().items()}


def everything(library: Path) -> tuple[Any, ...]:
    """What a refused command must leave exactly as it was: every ref (HEAD, the branch,
    the fetch and release refs), every file of the work tree (the lock included) and the
    local state directory's listing."""
    state = library / ".git" / "librarian"
    listing = sorted(str(p.relative_to(state)) for p in state.rglob("*")
                     if "cache" not in p.parts)
    return library_refs(library), tree_snapshot(library), listing


SSH_KEYGEN = shutil.which("ssh-keygen")
requires_ssh_keygen = pytest.mark.skipif(SSH_KEYGEN is None, reason="ssh-keygen is missing")


def keygen(*args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    assert SSH_KEYGEN is not None
    return subprocess.run([SSH_KEYGEN, *args], input=input, capture_output=True, check=False)


def ssh_keygen_key(path: Path, kind: str = "ed25519", passphrase: str = "") -> Path:
    result = keygen("-q", "-t", kind, "-N", passphrase, "-C", "alice@example.org", "-f", str(path))
    assert result.returncode == 0, result.stderr
    return path


def allowed_signers(path: Path, *pub_lines: str) -> Path:
    path.write_text("".join(f"alice@example.org {line}\n" for line in pub_lines))
    return path
