"""OpenSSH ed25519 keys: generating, reading and naming them.

A public key is the line ``ssh-ed25519 AAAA… comment`` that ``~/.ssh/id_ed25519.pub``
holds and git hosts publish; its fingerprint is ``SHA256:`` and the unpadded base64 of the
SHA-256 of the key blob, exactly as ``ssh-keygen -lf`` prints it. A private key is an
unencrypted OpenSSH private key file (what ``ssh-keygen -t ed25519 -N ''`` writes and
``key generate`` writes too). Only ed25519 is accepted: one algorithm, no parameters.
"""

from __future__ import annotations

import base64
import binascii
import getpass
import hashlib
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

from librarian.errors import ConflictError, UsageError
from librarian.trust.wire import Reader, WireError, string

KEY_TYPE = "ssh-ed25519"
MAX_KEY_FILE = 64 * 1024


@dataclass(frozen=True)
class PublicKey:
    """An ed25519 public key and the comment that came with it (not part of its identity:
    two keys are the same key when ``raw`` is equal)."""

    raw: bytes  # the 32 key bytes
    comment: str = ""

    @property
    def blob(self) -> bytes:
        """The SSH wire form: string "ssh-ed25519", string key."""
        return string(KEY_TYPE.encode()) + string(self.raw)

    @property
    def fingerprint(self) -> str:
        digest = base64.b64encode(hashlib.sha256(self.blob).digest()).decode()
        return "SHA256:" + digest.rstrip("=")

    def line(self) -> str:
        """``ssh-ed25519 AAAA… comment`` (no comment: two fields)."""
        text = f"{KEY_TYPE} {base64.b64encode(self.blob).decode()}"
        return f"{text} {self.comment}" if self.comment else text

    def same_key(self, other: PublicKey) -> bool:
        return self.raw == other.raw

    def verifier(self) -> Ed25519PublicKey:
        # cryptography (~40 ms to import) only where a signature is checked or made: an
        # update of unsigned sources never loads it.
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        return Ed25519PublicKey.from_public_bytes(self.raw)


@dataclass(frozen=True)
class SigningKey:
    private: Ed25519PrivateKey
    public: PublicKey


def public_key_from_blob(blob: bytes) -> PublicKey:
    """The key in an SSH wire blob; anything but a well-formed ed25519 blob is refused."""
    reader = Reader(blob)
    try:
        kind = reader.string()
        if kind != KEY_TYPE.encode():
            raise UsageError(f"the key is a {_shown(kind)} key; librarian accepts "
                             f"{KEY_TYPE} keys only",
                             hint="make one with `librarian key generate PATH` or "
                             "`ssh-keygen -t ed25519`")
        raw = reader.string()
        reader.end()
    except WireError as exc:
        raise UsageError(f"the key blob is malformed ({exc})") from None
    if len(raw) != 32:
        raise UsageError(f"an {KEY_TYPE} key is 32 bytes, this one is {len(raw)}")
    return PublicKey(raw)


def parse_public_key(text: str) -> PublicKey:
    """``ssh-ed25519 AAAA… [comment]`` → PublicKey. The type word must match the blob."""
    fields = text.strip().split(None, 2)
    if len(fields) < 2:
        raise UsageError(f"not a public key line: {_clip(text)!r}",
                         hint=f"expected '{KEY_TYPE} AAAA… comment', as in a .pub file")
    kind, encoded = fields[0], fields[1]
    comment = fields[2].strip() if len(fields) == 3 else ""
    if kind != KEY_TYPE:
        raise UsageError(f"the key is a {_shown(kind.encode())} key; librarian accepts "
                         f"{KEY_TYPE} keys only",
                         hint="make one with `librarian key generate PATH` or "
                         "`ssh-keygen -t ed25519`")
    try:
        blob = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise UsageError(f"the {KEY_TYPE} key's base64 is malformed: {_clip(encoded)!r}") from None
    key = public_key_from_blob(blob)
    return PublicKey(key.raw, comment)


def read_public_key(argument: str) -> PublicKey:
    """A key given on the command line: the line itself, or the path of a file holding it
    (a ``.pub`` file: its first ed25519 key)."""
    return read_public_keys(argument)[0]


def read_public_keys(argument: str) -> tuple[PublicKey, ...]:
    """The keys an argument names: the line itself; or every ed25519 line of a file (a
    ``.pub`` file, or the key list a git host publishes at ``https://<host>/<user>.keys``,
    where other key types are skipped; a file with no ed25519 key at all is refused)."""
    if argument.strip().startswith("ssh-"):
        return (parse_public_key(argument),)
    path = Path(argument).expanduser()
    if not path.exists():
        raise UsageError(f"{_clip(argument)!r} is neither a public key line nor a key file",
                         hint=f"a key is a '{KEY_TYPE} AAAA… comment' line (quoted) or the "
                         "path of a .pub file")
    text = _read_small(path, "public key file")
    if "PRIVATE KEY-----" in text:  # never echo any of it
        raise UsageError(f"{path} is a private key; a trusted key is the public one",
                         hint=f"pass {path}.pub, or the line `librarian key public {path}` "
                         "prints")
    lines = [line for line in text.splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise UsageError(f"{path} holds no public key line")
    ours = [line for line in lines if line.split(None, 1)[0] == KEY_TYPE]
    if not ours:
        return (parse_public_key(lines[0]),)  # raises: says which type it is
    return tuple(parse_public_key(line) for line in ours)


def public_key_of(path: Path) -> PublicKey:
    """The public key of a key file: a ``.pub`` file, or an OpenSSH private key."""
    text = _read_small(path, "key file")
    if text.lstrip().startswith("ssh-"):
        return read_public_key(str(path))
    return load_signing_key(path).public


def load_signing_key(path: Path) -> SigningKey:
    """An unencrypted OpenSSH ed25519 private key file. The comment is taken from
    ``PATH.pub`` when that file holds the same key."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    data = _read_small(path, "private key file").encode("utf-8", "surrogateescape")
    try:
        private = serialization.load_ssh_private_key(data, password=None)
    except TypeError:  # cryptography: "Key is password-protected"
        raise UsageError(f"{path} is encrypted with a passphrase; librarian signs with "
                         "unencrypted keys only",
                         hint="use a dedicated release key (`librarian key generate PATH`)"
                         ) from None
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise UsageError(f"{path} is not an OpenSSH private key ({_clip(str(exc))})",
                         hint="make one with `librarian key generate PATH` or "
                         "`ssh-keygen -t ed25519`") from None
    if not isinstance(private, Ed25519PrivateKey):
        kind = type(private).__name__.removeprefix("_").replace("PrivateKey", "").upper()
        raise UsageError(f"{path} is an {kind or 'unknown'} key; releases are signed with "
                         f"{KEY_TYPE} keys only",
                         hint="make one with `librarian key generate PATH` or "
                         "`ssh-keygen -t ed25519`")
    raw = private.public_key().public_bytes(serialization.Encoding.Raw,
                                            serialization.PublicFormat.Raw)
    comment = ""
    pub = _pub_path(path)
    if pub.is_file():
        try:
            beside = read_public_key(str(pub))
        except UsageError:
            beside = None
        if beside is not None and beside.raw == raw:
            comment = beside.comment
    return SigningKey(private, PublicKey(raw, comment))


def generate_key(path: Path, comment: str | None = None) -> SigningKey:
    """Write a new ed25519 key: ``path`` (OpenSSH private key, mode 0600) and
    ``path.pub`` (the public line). Neither file may exist yet."""
    pub = _pub_path(path)
    for target in (path, pub):
        if target.exists() or target.is_symlink():
            raise ConflictError(f"{target} already exists; a key is never overwritten",
                                hint="choose another PATH, or remove the old key first")
    if comment is None:
        comment = _default_comment()
    if any(c in comment for c in "\r\n"):
        raise UsageError("a key comment is one line")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {path.parent}: {exc.strerror}") from None
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.generate()
    raw = private.public_key().public_bytes(serialization.Encoding.Raw,
                                            serialization.PublicFormat.Raw)
    key = SigningKey(private, PublicKey(raw, comment))
    pem = private.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption())
    _write_new(path, pem, 0o600)
    try:
        _write_new(pub, (key.public.line() + "\n").encode(), 0o644)
    except BaseException:
        path.unlink()
        raise
    return key


def _write_new(path: Path, data: bytes, mode: int) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except FileExistsError:
        raise ConflictError(f"{path} already exists; a key is never overwritten") from None
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    try:
        os.fchmod(fd, mode)  # not widened or narrowed by the umask
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_small(path: Path, what: str) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_KEY_FILE + 1)
    except FileNotFoundError:
        raise UsageError(f"no {what} at {path}") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror}") from None
    if len(data) > MAX_KEY_FILE:
        raise UsageError(f"{path} is too large to be a {what}")
    return data.decode("utf-8", "surrogateescape")


def _pub_path(path: Path) -> Path:
    return path.with_name(path.name + ".pub")


def _default_comment() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "librarian"
    return f"{user}@{socket.gethostname()}"


def _shown(kind: bytes) -> str:
    return repr(kind.decode("utf-8", "replace")[:40])


def _clip(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "…"
