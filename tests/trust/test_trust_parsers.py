"""Round trips and refusals of the trust package's parsers (hypothesis): public-key lines,
SSHSIG armor, release statements, tag objects."""

from __future__ import annotations

import base64
from datetime import datetime, timedelta, timezone

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import given, settings
from hypothesis import strategies as st

from librarian.errors import TrustError, UsageError
from librarian.trust.keys import PublicKey, SigningKey, parse_public_key
from librarian.trust.sshsig import Signature, parse_armored, sign, verify
from librarian.trust.statement import ReleaseStatement, dump_statement, parse_statement
from librarian.trust.tag import parse_tag, signed_tag, tag_payload

_KEY = Ed25519PrivateKey.generate()
_SIGNING = SigningKey(_KEY, PublicKey(_KEY.public_key().public_bytes(Encoding.Raw,
                                                                    PublicFormat.Raw)))

comments = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FFF,
                                 blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")),
                   max_size=30)
segments = st.from_regex(r"[a-z0-9][a-z0-9-]{0,10}", fullmatch=True)
paths = st.lists(segments, min_size=1, max_size=3).map("/".join)
digests = st.binary(min_size=32, max_size=32).map(lambda b: "sha256:" + b.hex())
times = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2200, 1, 1),
                     timezones=st.just(timezone.utc)).map(lambda t: t.replace(microsecond=0))


@given(st.binary(min_size=32, max_size=32), comments)
def test_public_key_lines_round_trip(raw: bytes, comment: str) -> None:
    key = PublicKey(raw, comment)
    assert parse_public_key(key.line()) == key
    assert parse_public_key("  " + key.line() + "\n") == key
    assert key.fingerprint.startswith("SHA256:") and len(key.fingerprint) == 7 + 43


@given(st.text(max_size=80))
def test_arbitrary_key_text_is_refused_cleanly(text: str) -> None:
    try:
        parse_public_key(text)
    except UsageError:
        pass


def test_key_lines_that_lie_are_refused() -> None:
    key = PublicKey(b"\x01" * 32)
    blob = base64.b64encode(key.blob).decode()
    with pytest.raises(UsageError, match="ed25519 keys only"):
        parse_public_key(f"ssh-rsa {blob}")
    short = base64.b64encode(key.blob[:-1]).decode()
    with pytest.raises(UsageError):
        parse_public_key(f"ssh-ed25519 {short}")
    with pytest.raises(UsageError):
        parse_public_key(f"ssh-ed25519 {blob}AAAA")


@settings(max_examples=50)
@given(st.binary(max_size=300), st.sampled_from(["git", "file"]))
def test_signatures_round_trip_and_verify(message: bytes, namespace: str) -> None:
    armored = sign(_SIGNING, message, namespace)
    parsed = parse_armored(armored)
    assert parsed.armored() == armored
    assert all(len(line) <= 70 for line in armored.splitlines())
    assert verify(message, armored, namespace).same_key(_SIGNING.public)


@given(st.binary(max_size=200))
def test_arbitrary_armor_is_refused_cleanly(blob: bytes) -> None:
    armored = b"-----BEGIN SSH SIGNATURE-----\n" + base64.b64encode(blob) + \
        b"\n-----END SSH SIGNATURE-----\n"
    with pytest.raises(TrustError):
        verify(b"x", armored)


def test_a_signature_from_another_key_blob_does_not_verify() -> None:
    armored = sign(_SIGNING, b"message")
    parsed = parse_armored(armored)
    other = Signature(PublicKey(b"\x02" * 32), parsed.namespace, parsed.reserved,
                      parsed.hash_algorithm, parsed.signature)
    with pytest.raises(TrustError):
        verify(b"message", other.armored())


statements = st.builds(
    lambda version, commit, created, days, items: ReleaseStatement(
        version, commit, created, created + timedelta(days=days), items),
    st.integers(min_value=1, max_value=10**12),
    st.binary(min_size=20, max_size=20).map(bytes.hex),
    times,
    st.integers(min_value=1, max_value=3650),
    st.dictionaries(paths, digests, max_size=8),
)


@given(statements)
def test_statements_round_trip(statement: ReleaseStatement) -> None:
    assert parse_statement(dump_statement(statement)) == statement


@given(st.binary(max_size=300))
def test_arbitrary_statements_are_refused_cleanly(data: bytes) -> None:
    try:
        parse_statement(data)
    except TrustError:
        pass


@pytest.mark.parametrize("change", [
    ("version: 3", "version: true"),
    ("version: 3", "version: 0"),
    ("librarian-release: 1", "librarian-release: 2"),
    ("items:", "extra: 1\nitems:"),
    ("skills/pdf:", "../pdf:"),
    ("sha256:" + "ab" * 32, "sha256:AB"),
    ("expires: '2027-03-01T09:00:00Z'", "expires: '2026-01-01T09:00:00Z'"),
    ("created: '2026-12-01T09:00:00Z'", "created: 2026-12-01 09:00:00"),
])
def test_statements_are_parsed_strictly(change: tuple[str, str]) -> None:
    text = ("librarian-release: 1\nversion: 3\ncommit: " + "a" * 40 + "\n"
            "created: '2026-12-01T09:00:00Z'\nexpires: '2027-03-01T09:00:00Z'\n"
            "items:\n  skills/pdf: sha256:" + "ab" * 32 + "\n")
    assert parse_statement(text.encode()).version == 3
    with pytest.raises(TrustError):
        parse_statement(text.replace(*change).encode())


def test_an_unquoted_yaml_timestamp_is_read_as_utc() -> None:
    text = ("librarian-release: 1\nversion: 1\ncommit: " + "a" * 40 + "\n"
            "created: 2026-12-01T10:00:00+01:00\nexpires: 2027-03-01T09:00:00Z\nitems: {}\n")
    statement = parse_statement(text.encode())
    assert statement.created == datetime(2026, 12, 1, 9, tzinfo=timezone.utc)


messages = st.binary(max_size=200).filter(lambda m: b"-----BEGIN" not in m)


@given(st.binary(min_size=20, max_size=20).map(bytes.hex), st.integers(1, 10**6), messages)
def test_tags_round_trip(commit: str, version: int, message: bytes) -> None:
    name = f"librarian-release/{version}"
    tagger = b"Alice <alice@example.org> 1764579600 +0000"
    raw = signed_tag(commit, name, tagger, message, _SIGNING)
    tag = parse_tag(raw)
    assert (tag.object, tag.object_type, tag.name, tag.tagger) == (commit, "commit", name, tagger)
    assert tag.payload == tag_payload(commit, name, tagger, message)
    assert tag.message + (b"" if message.endswith(b"\n") else b"") == tag.payload.split(
        b"\n\n", 1)[1]
    assert tag.ssh_signed and verify(tag.payload, tag.signature or b"").same_key(_SIGNING.public)
    unsigned = parse_tag(tag.payload)
    assert unsigned.signature is None and unsigned.payload == tag.payload


@given(st.binary(max_size=300))
def test_arbitrary_tags_are_refused_cleanly(raw: bytes) -> None:
    try:
        parse_tag(raw)
    except TrustError:
        pass
