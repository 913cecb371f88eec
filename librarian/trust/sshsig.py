"""SSHSIG signatures (OpenSSH's PROTOCOL.sshsig), as ``ssh-keygen -Y sign`` makes them and
git uses them for ``gpg.format=ssh``.

The armored form is ``-----BEGIN SSH SIGNATURE-----``, the base64 of the signature blob
in lines of 70 characters, ``-----END SSH SIGNATURE-----``. The blob is::

    byte[6] "SSHSIG"  uint32 1  string publickey  string namespace  string reserved
    string hash_algorithm  string signature

and what is signed is ``"SSHSIG" string namespace string reserved string hash_algorithm
string H(message)``, so a signature made for one namespace (git uses ``git``) never
verifies in another. Signing uses sha512 (ssh-keygen's default); sha256 and sha512 verify.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

from librarian.errors import TrustError, UsageError
from librarian.trust.keys import KEY_TYPE, PublicKey, SigningKey, public_key_from_blob
from librarian.trust.wire import Reader, WireError, string, uint32

MAGIC = b"SSHSIG"
VERSION = 1
NAMESPACE = "git"
BEGIN = b"-----BEGIN SSH SIGNATURE-----"
END = b"-----END SSH SIGNATURE-----"
_HASHES = {"sha256": hashlib.sha256, "sha512": hashlib.sha512}
_WIDTH = 70


@dataclass(frozen=True)
class Signature:
    """A parsed SSHSIG blob (not yet verified)."""

    public_key: PublicKey
    namespace: str
    reserved: bytes
    hash_algorithm: str
    signature: bytes  # the raw 64-byte ed25519 signature

    def blob(self) -> bytes:
        return (MAGIC + uint32(VERSION) + string(self.public_key.blob)
                + string(self.namespace.encode()) + string(self.reserved)
                + string(self.hash_algorithm.encode())
                + string(string(KEY_TYPE.encode()) + string(self.signature)))

    def armored(self) -> bytes:
        encoded = base64.b64encode(self.blob())
        lines = [encoded[i:i + _WIDTH] for i in range(0, len(encoded), _WIDTH)]
        return b"\n".join([BEGIN, *lines, END]) + b"\n"


def signed_data(message: bytes, namespace: str, hash_algorithm: str,
                reserved: bytes = b"") -> bytes:
    digest = _HASHES[hash_algorithm](message).digest()
    return (MAGIC + string(namespace.encode()) + string(reserved)
            + string(hash_algorithm.encode()) + string(digest))


def sign(key: SigningKey, message: bytes, namespace: str = NAMESPACE) -> bytes:
    """The armored SSHSIG of ``message`` (ending in a newline, as ssh-keygen writes it)."""
    raw = key.private.sign(signed_data(message, namespace, "sha512"))
    return Signature(key.public, namespace, b"", "sha512", raw).armored()


def parse_armored(armored: bytes) -> Signature:
    """The blob inside an armored signature; anything malformed is a TrustError."""
    lines = [line.strip() for line in armored.strip().split(b"\n")]
    if len(lines) < 3 or lines[0] != BEGIN or lines[-1] != END:
        raise TrustError("the signature is not an armored SSH signature")
    try:
        blob = base64.b64decode(b"".join(lines[1:-1]), validate=True)
    except (binascii.Error, ValueError):
        raise TrustError("the SSH signature's base64 is malformed") from None
    return parse_blob(blob)


def parse_blob(blob: bytes) -> Signature:
    reader = Reader(blob)
    try:
        if reader.raw(len(MAGIC)) != MAGIC:
            raise TrustError("the signature is not an SSHSIG signature")
        version = reader.uint32()
        if version != VERSION:
            raise TrustError(f"the SSH signature has version {version}; version 1 is known")
        key_blob = reader.string()
        namespace = reader.string()
        reserved = reader.string()
        hash_algorithm = reader.string()
        inner = Reader(reader.string())
        reader.end()
        kind = inner.string()
        raw = inner.string()
        inner.end()
    except WireError as exc:
        raise TrustError(f"the SSH signature is malformed ({exc})") from None
    try:
        key = public_key_from_blob(key_blob)
    except UsageError as exc:  # a bad key inside a signature is a trust failure
        raise TrustError(f"the signature's key is unusable: {exc}") from None
    if kind != KEY_TYPE.encode() or len(raw) != 64:
        raise TrustError("the SSH signature is not an ed25519 signature")
    try:
        hash_name = hash_algorithm.decode("ascii")
        namespace_text = namespace.decode("utf-8")
    except UnicodeDecodeError:
        raise TrustError("the SSH signature's namespace or hash is not text") from None
    if hash_name not in _HASHES:
        raise TrustError(f"the SSH signature uses hash {hash_name[:20]!r}; "
                         "sha256 and sha512 are accepted")
    return Signature(key, namespace_text, reserved, hash_name, raw)


def verify(message: bytes, armored: bytes, namespace: str = NAMESPACE) -> PublicKey:
    """Check that ``armored`` is a valid signature of ``message`` in ``namespace`` and return
    the key that made it (whether that key is trusted is the caller's question)."""
    signature = parse_armored(armored)
    if signature.namespace != namespace:
        raise TrustError(f"the signature is for namespace {signature.namespace[:40]!r}, "
                         f"not {namespace!r}")
    data = signed_data(message, namespace, signature.hash_algorithm, signature.reserved)
    from cryptography.exceptions import InvalidSignature  # only here: see keys.verifier

    try:
        signature.public_key.verifier().verify(signature.signature, data)
    except InvalidSignature:
        raise TrustError("the signature does not match the signed content (it was made for "
                         "other content, or the content was changed after signing)") from None
    return signature.public_key
