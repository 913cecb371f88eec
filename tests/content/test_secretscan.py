from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from librarian.content.secretscan import secret_problem

MIB = 1024 * 1024

# Fixtures are assembled at run time so this file itself never looks like it holds secrets.
BEGIN, END = "-----BEGIN ", "-----END "
KEY_DATA = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n" * 3


def pem(label: str, headers: str = "") -> bytes:
    return f"{BEGIN}{label}-----\n{headers}{KEY_DATA}{END}{label}-----\n".encode()


def github(prefix: str) -> str:
    return prefix + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"


@pytest.mark.parametrize(
    "path",
    [".env", "sub/.env", ".env.local", "a/.env.production", ".ENV"],
)
def test_env_files(path: str) -> None:
    assert secret_problem(path, b"A=1\n") == ".env file"


@pytest.mark.parametrize(
    "path",
    [".env.example", "x/.env.sample", ".env.template", "env.md", ".envrc", "my.env.txt", "x.env"],
)
def test_env_lookalikes_pass(path: str) -> None:
    assert secret_problem(path, b"A=1\n") is None


@pytest.mark.parametrize("path", ["id_rsa", "keys/id_ed25519", "id_ecdsa", "id_dsa"])
def test_ssh_key_file_names(path: str) -> None:
    assert secret_problem(path, b"") == "SSH private key file name"


def test_public_keys_pass() -> None:
    assert secret_problem("id_rsa.pub", b"ssh-rsa AAAAB3NzaC1yc2E me@host\n") is None
    assert secret_problem("cert.pem", pem("CERTIFICATE")) is None
    assert secret_problem("pub.pem", pem("PUBLIC KEY")) is None


@pytest.mark.parametrize(
    ("label", "headers"),
    [
        ("RSA PRIVATE KEY", ""),
        ("PRIVATE KEY", ""),
        ("EC PRIVATE KEY", ""),
        ("DSA PRIVATE KEY", ""),
        ("OPENSSH PRIVATE KEY", ""),
        ("ENCRYPTED PRIVATE KEY", ""),
        ("RSA PRIVATE KEY", "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\n"),
        ("PGP PRIVATE KEY BLOCK", "Version: GnuPG v2\n\n"),
    ],
)
def test_private_key_blocks(label: str, headers: str) -> None:
    data = b"some text\n" + pem(label, headers)
    assert secret_problem("notes/key.txt", data) == "private key block"
    assert secret_problem("k", data.replace(b"\n", b"\r\n")) == "private key block"


def test_private_key_escaped_in_json() -> None:
    key = f"{BEGIN}PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n{END}PRIVATE KEY-----\\n"
    data = ('{"type": "service_account", "private_key": "' + key + '"}').encode()
    assert secret_problem("sa.json", data) == "private key block"


def test_docs_that_mention_key_headers_pass() -> None:
    doc = f"The file starts with `{BEGIN}OPENSSH PRIVATE KEY-----` and ends ...\n".encode()
    assert secret_problem("SKILL.md", doc) is None
    example = f"```\n{BEGIN}RSA PRIVATE KEY-----\n...\n{END}RSA PRIVATE KEY-----\n```\n"
    assert secret_problem("README.md", example.encode()) is None
    # ... but a .pem or .key file holding the header is a key file whatever follows.
    assert secret_problem("server.key", example.encode()) == "private key file"
    assert secret_problem("a/b.PEM", example.encode()) == "private key file"


@pytest.mark.parametrize("prefix", ["AKIA", "ASIA"])
def test_aws_access_key_ids(prefix: str) -> None:
    key = prefix + "Z7Q2M4N6P8R3T5V9"
    assert secret_problem("config.py", f'key = "{key}"\n'.encode()) == "AWS access key id"
    assert secret_problem("x", f"X{key}".encode()) is None  # inside a longer word
    assert secret_problem("x", f"{key}X".encode()) is None


def test_aws_documentation_key_passes() -> None:
    assert secret_problem("doc.md", b"aws_access_key_id = AKIA" + b"IOSFODNN7EXAMPLE\n") is None


@pytest.mark.parametrize("prefix", ["ghp_", "gho_", "ghs_", "ghu_", "ghr_"])
def test_github_tokens(prefix: str) -> None:
    assert secret_problem("x.sh", f"export T={github(prefix)}\n".encode()) == "GitHub token"


def test_github_fine_grained_token() -> None:
    token = "github_pat_" + "11ABCDEFG0aBcDeFgHiJkL_" + "mNoPqRsTuVwXyZ0123456789abcdefghij"
    assert secret_problem("x", token.encode()) == "GitHub token"


def test_token_placeholders_pass() -> None:
    assert secret_problem("x.md", ("ghp_" + "x" * 36).encode()) is None
    assert secret_problem("x.md", b"Set SLACK_TOKEN=xoxb-your-token-here") is None
    assert secret_problem("x.md", b"ghp_ is the prefix of a classic token") is None


def test_slack_and_google() -> None:
    slack = "xoxb-" + "2934857201-4958372615-" + "aB3dE5fG7hJ9kL1mN3pQ5rS7"
    assert secret_problem("x", slack.encode()) == "Slack token"
    google = "AIza" + "SyB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z"
    assert len(google) == 39
    assert secret_problem("x", f"key={google}&q=1".encode()) == "Google API key"
    assert secret_problem("x", f"key={google}A".encode()) is None  # too long to be one


def test_ordinary_docs_pass() -> None:
    doc = (
        b"# Auth\nPass the token in the Authorization header. Never commit a password,\n"
        b"an API key or a private key. Use `gh auth token` or $GITHUB_TOKEN.\n"
        b"AKIA keys are AWS access keys; see -----BEGIN blocks in PEM files.\n"
    )
    assert secret_problem("SKILL.md", doc) is None


def test_the_whole_file_is_scanned() -> None:
    """Files may be up to 8 MiB: a secret after the first MiB is still found."""
    secret = ("\n" + github("ghp_") + "\n").encode()
    assert secret_problem("big.txt", b"a" * (MIB - 100) + secret) == "GitHub token"
    assert secret_problem("big.txt", b"a" * (7 * MIB) + secret) == "GitHub token"
    key = b"x" * (2 * MIB) + pem("RSA PRIVATE KEY")
    assert secret_problem("notes.txt", key) == "private key block"


@pytest.mark.parametrize(("token", "reason"), [
    ("sk-ant-api03-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7cDE0fGH3iJK6lMN9oPQ",
     "Anthropic API key"),
    ("sk-proj-" + "Zx81Yw72Xv63Wu54Vt45Us36Tr27Sq18Rp09QoPn1Om2Nl3Mk4Lj5", "OpenAI API key"),
    ("glpat-" + "a1B2c3D4e5F6g7H8i9J0k", "GitLab token"),
    ("npm_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "npm token"),
    ("sk_live_" + "51HqLyjWDarjtT1zdp7dcXyz12", "Stripe secret key"),
    ("hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "Hugging Face token"),
])
def test_common_api_tokens_are_refused(token: str, reason: str) -> None:
    assert secret_problem("notes.txt", f"key = {token}\n".encode()) == reason
    placeholder = token[:8] + "x" * (len(token) - 8)
    assert secret_problem("notes.txt", f"key = {placeholder}\n".encode()) is None


def test_binary_data_and_long_text() -> None:
    """Scanning speed is bench/'s to measure; here a megabyte of noise and a long text of
    near misses are scanned to the end without a false alarm."""
    assert secret_problem("blob.bin", bytes(range(256)) * (MIB // 256)) is None
    assert secret_problem("text.md", b"The quick brown fox -- gh AKIA xo Ai\n" * 30000) is None
    assert secret_problem("img.png", b"\x89PNG\r\n" + pem("RSA PRIVATE KEY")) == (
        "private key block"
    )


@settings(max_examples=200, deadline=None, database=None)
@given(st.text(max_size=40), st.binary(max_size=2000))
def test_never_raises(path: str, data: bytes) -> None:
    result = secret_problem(path, data)
    assert result is None or isinstance(result, str)


# -- the fingerprint allowlist (spec §2.5) ----------------------------------------

GOOGLE_EXAMPLE = "AIza" + "SyA1B2C3D4E5F6G7H8I9J0K1L2M3N4O5P6Q"  # a documentation example


def test_a_match_is_allowed_by_the_fingerprint_of_its_text_and_nothing_else() -> None:
    import hashlib

    from librarian.content.secretscan import secret_matches, secret_refusal

    data = f"Example: {GOOGLE_EXAMPLE}\n".encode()
    (match,) = secret_matches("references/v.md", data)
    assert match.fingerprint == "sha256:" + hashlib.sha256(GOOGLE_EXAMPLE.encode()).hexdigest()
    refusal = secret_refusal("references/v.md", data, ())
    assert refusal == ("references/v.md: looks like a secret (Google API key); if it is not "
                       "one, allow exactly this match in library.yaml: policy: "
                       f"{{allowed_secrets: [{match.fingerprint}]}}, then commit "
                       "library.yaml (only its committed policy applies)")
    assert secret_refusal("references/v.md", data, (match.fingerprint,)) is None
    # another match in the same file is still refused
    other = data + github("ghp_").encode()
    assert "GitHub token" in (secret_refusal("v.md", other, (match.fingerprint,)) or "")
    # the same fingerprint does not allow a different key of the same kind
    changed = data.replace(b"P6Q", b"P6R")
    assert secret_refusal("v.md", changed, (match.fingerprint,)) is not None


@pytest.mark.parametrize(
    "path", [".env.local.example", "x/.env.production.example", ".env.dev.sample",
             ".env.test.template", ".ENV.Local.Example"])
def test_the_env_example_family_passes(path: str) -> None:
    assert secret_problem(path, b"A=1\n") is None


@pytest.mark.parametrize("path", [".env.example.local", ".env.examples", ".env.local"])
def test_env_files_that_are_not_examples(path: str) -> None:
    assert secret_problem(path, b"A=1\n") == ".env file"


# -- the literal prefilter: a file holding no fixed prefix is never run through the regex --

#: Each alternative of the regex without its lookarounds, by group name (a new pattern
#: without an entry here fails the first test below).
_CORES = {
    "pem": rb"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----\n[A-Za-z0-9+/=]{16,20}",
    "aws": rb"(?:AKIA|ASIA)[0-9A-Z]{16}",
    "github": rb"gh[pousr]_[A-Za-z0-9]{36,40}|github_pat_[A-Za-z0-9_]{22,30}",
    "slack": rb"xox[abprs]-[0-9]{1,20}-[A-Za-z0-9-]{10,14}",
    "google": rb"AIza[0-9A-Za-z_-]{35}",
    "anthropic": rb"sk-ant-[a-z0-9]{2,10}-[A-Za-z0-9_-]{40,44}",
    "openai": rb"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{40,44}",
    "gitlab": rb"glpat-[A-Za-z0-9_-]{20,24}",
    "npm": rb"npm_[A-Za-z0-9]{36}",
    "stripe": rb"[sr]k_live_[A-Za-z0-9]{20,24}",
    "huggingface": rb"hf_[A-Za-z0-9]{34,38}",
}


def test_every_pattern_has_a_core_for_the_prefilter_test() -> None:
    from librarian.content.secretscan import _SECRET_RE

    assert set(_SECRET_RE.groupindex) == set(_CORES)


_around = st.binary(max_size=40) | st.sampled_from([b"", b" ", b"\n", b"x", b"=", b'"'])


@settings(max_examples=300, deadline=None, database=None)
@given(st.sampled_from(sorted(_CORES)).flatmap(
    lambda kind: st.from_regex(_CORES[kind], fullmatch=True)), _around, _around)
def test_the_prefilter_never_hides_a_match(token: bytes, before: bytes, after: bytes) -> None:
    from unittest import mock

    from librarian.content import secretscan

    data = before + token + after
    if any(secretscan._SECRET_RE.finditer(data)):  # what the regex alone finds ...
        assert any(literal in data for literal in secretscan._SECRET_LITERALS)  # ... passes
    filtered = list(secretscan.secret_matches("notes.md", data))
    with mock.patch.object(secretscan, "_SECRET_LITERALS", (b"",)):  # the regex always runs
        assert list(secretscan.secret_matches("notes.md", data)) == filtered
