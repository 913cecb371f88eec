"""The annotated tag object exactly as ``git tag -s`` writes it with ``gpg.format=ssh``.

::

    object <commit id>
    type commit
    tag librarian-release/3
    tagger Alice <alice@example.org> 1764579600 +0000
    <blank line>
    <message, ending in a newline>
    -----BEGIN SSH SIGNATURE-----
    …
    -----END SSH SIGNATURE-----

The signature covers every byte before it (the headers, the blank line, the message), so
it binds the tagged commit, the tag's name and the statement together. Like git
(``parse_signed_buffer``), the signature starts at the last line that begins a signature
block; an OpenPGP block there means the tag is signed, but not with an SSH key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from librarian.errors import TrustError
from librarian.trust.keys import SigningKey
from librarian.trust.sshsig import BEGIN, sign

RELEASE_TAG_PREFIX = "librarian-release/"
_SIGNATURE_STARTS = (BEGIN, b"-----BEGIN PGP SIGNATURE-----", b"-----BEGIN PGP MESSAGE-----",
                     b"-----BEGIN SIGNED MESSAGE-----")
_HEX = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")
_RELEASE_NAME = re.compile(r"librarian-release/([1-9][0-9]{0,17})")


@dataclass(frozen=True)
class TagObject:
    object: str  # hex id of the tagged object
    object_type: str  # "commit" for a release
    name: str  # the tag header (not the ref it was found under)
    tagger: bytes | None
    message: bytes  # without the signature
    signature: bytes | None  # the armored block, or None when unsigned
    payload: bytes  # the signed bytes: everything before the signature

    @property
    def ssh_signed(self) -> bool:
        return self.signature is not None and self.signature.startswith(BEGIN)


def release_tag_name(version: int) -> str:
    return f"{RELEASE_TAG_PREFIX}{version}"


def release_version(name: str) -> int | None:
    """N for ``librarian-release/N`` (no sign, no leading zero), else None."""
    match = _RELEASE_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


def tag_payload(object_id: str, name: str, tagger: bytes, message: bytes) -> bytes:
    """The unsigned tag object body; ``message`` gets the final newline git gives it."""
    if not _HEX.fullmatch(object_id.encode()):
        raise ValueError("the tagged object must be a full hexadecimal id")
    if any(c in name for c in " \n\x00") or any(c in tagger for c in b"\n\x00"):
        raise ValueError("a tag name and tagger are one line each")
    if not message.endswith(b"\n"):
        message += b"\n"
    return (b"object " + object_id.encode() + b"\ntype commit\ntag " + name.encode()
            + b"\ntagger " + tagger + b"\n\n" + message)


def signed_tag(object_id: str, name: str, tagger: bytes, message: bytes,
               key: SigningKey) -> bytes:
    """The whole tag object body, signed as git signs it (SSHSIG, namespace ``git``)."""
    payload = tag_payload(object_id, name, tagger, message)
    return payload + sign(key, payload)


def parse_tag(raw: bytes) -> TagObject:
    """Split a tag object body into its headers, message and signature."""
    head, sep, body = raw.partition(b"\n\n")
    if not sep:
        head, body = raw.rstrip(b"\n"), b""
    headers: dict[bytes, bytes] = {}
    for line in head.split(b"\n"):
        key, space, value = line.partition(b" ")
        if not space or key in headers:
            raise TrustError("the release tag's headers are malformed")
        headers[key] = value
    for required in (b"object", b"type", b"tag"):
        if required not in headers:
            raise TrustError(f"the release tag has no {required.decode()} header")
    if not _HEX.fullmatch(headers[b"object"]):
        raise TrustError("the release tag's object is not a hexadecimal id")
    start = _signature_start(body)
    offset = len(raw) - len(body)
    message = body[:start]
    signature = body[start:] if start < len(body) else None
    try:
        name = headers[b"tag"].decode("utf-8")
        object_type = headers[b"type"].decode("ascii")
    except UnicodeDecodeError:
        raise TrustError("the release tag's name or type is not text") from None
    return TagObject(headers[b"object"].decode(), object_type, name, headers.get(b"tagger"),
                     message, signature, raw[:offset + start])


def _signature_start(body: bytes) -> int:
    """Offset of the last line that starts a signature block (len(body) when none)."""
    match = len(body)
    offset = 0
    while offset < len(body):
        if body.startswith(_SIGNATURE_STARTS, offset):
            match = offset
        end = body.find(b"\n", offset)
        offset = len(body) if end < 0 else end + 1
    return match
