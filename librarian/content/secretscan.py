"""Refuse files that look like secrets (spec §2.5) before they enter a git history forever.

One precompiled bytes regex over the whole file (files are at most ``max_file_bytes``,
8 MiB by default: ~17 ms a MiB), run only when the file holds one of the fixed prefixes
every pattern starts with. Patterns ask for the shape of real credentials (key
material after a PEM header, full-length tokens) and skip obvious placeholders, so
documentation that merely talks about keys and tokens passes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

# Example files are meant to be shared (.env.example, .env.local.example, …); everything
# else named .env / .env.* is not.
_ENV_EXAMPLE_SUFFIXES = (".example", ".sample", ".template")
_SSH_KEY_NAMES = frozenset(
    {"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk"}
)
_KEY_FILE_SUFFIXES = (".pem", ".key")

_NL = rb"(?:[ \t]*(?:\r?\n|\\r\\n|\\n))"  # a real or an escaped ("\n" in JSON) line break
_SECRET_RE = re.compile(
    # Cheap first-character gate: without it the alternation is ~4x slower on plain text.
    rb"(?=[-Agxsnhr])(?:"
    # PEM / OpenSSH / PGP private key: the header, optional armour headers, then key data.
    rb"(?P<pem>-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----" + _NL + rb"+"
    rb"(?:[A-Za-z][A-Za-z0-9-]{0,40}:[^\r\n\\]{0,200}" + _NL + rb"+)*"
    rb"[A-Za-z0-9+/=]{16,})"
    rb"|(?<![A-Za-z0-9])(?:"
    rb"(?P<aws>(?:AKIA|ASIA)[0-9A-Z]{16})(?![A-Za-z0-9])"
    rb"|(?P<github>gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"
    rb"|(?P<slack>xox[abprs]-[0-9]{1,20}-[A-Za-z0-9-]{10,})"
    rb"|(?P<google>AIza[0-9A-Za-z_-]{35})(?![A-Za-z0-9_-])"
    rb"|(?P<anthropic>sk-ant-[a-z0-9]{2,10}-[A-Za-z0-9_-]{40,})"
    rb"|(?P<openai>sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{40,})"
    rb"|(?P<gitlab>glpat-[A-Za-z0-9_-]{20,})"
    rb"|(?P<npm>npm_[A-Za-z0-9]{36})(?![A-Za-z0-9])"
    rb"|(?P<stripe>[sr]k_live_[A-Za-z0-9]{20,})"
    rb"|(?P<huggingface>hf_[A-Za-z0-9]{34,})"
    rb"))"
)
# Every alternative of _SECRET_RE holds one of these as it is: a file holding none cannot
# match, and a substring test (C, several GB/s) is far cheaper than the regex's ~60 MB/s
# on real collections (~4% of their files hold one, mostly "sk-" in prose).
_SECRET_LITERALS = (b"-----BEGIN", b"AKIA", b"ASIA", b"ghp_", b"gho_", b"ghu_", b"ghs_",
                    b"ghr_", b"github_pat_", b"xox", b"AIza", b"sk-", b"glpat-", b"npm_",
                    b"k_live_", b"hf_")
# The secret half of an AWS key pair, by the name every SDK and config file gives it. A
# separate pattern, run only when the file holds the name as snake, SCREAMING or camel case
# (a substring test is nearly free; the case-insensitive pattern costs ~10 ms a MiB).
_AWS_SECRET_NAMES = (b"ecret_access_key", b"ECRET_ACCESS_KEY", b"ecretAccessKey")
_AWS_SECRET_RE = re.compile(
    rb"(?<![A-Za-z0-9])(?i:aws_?secret_?access_?key)[\"']?[ \t]*[:=][ \t]*[\"']?"
    rb"(?P<awssecret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)
_PEM_HEADER_RE = re.compile(rb"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")

_REASONS = {
    "pem": "private key block",
    "aws": "AWS access key id",
    "awssecret": "AWS secret access key",
    "github": "GitHub token",
    "slack": "Slack token",
    "google": "Google API key",
    "anthropic": "Anthropic API key",
    "openai": "OpenAI API key",
    "gitlab": "GitLab token",
    "npm": "npm token",
    "stripe": "Stripe secret key",
    "huggingface": "Hugging Face token",
}
# Fewer distinct characters than this in a token means a placeholder like ghp_xxxx…xxxx.
_MIN_DISTINCT = 8


@dataclass(frozen=True, slots=True)
class SecretMatch:
    reason: str
    #: ``sha256:<hex>`` of the matched text (of the whole file for a match by file name):
    #: what ``policy: {allowed_secrets: […]}`` names to let exactly this match through
    fingerprint: str


def fingerprint(text: bytes) -> str:
    return "sha256:" + hashlib.sha256(text).hexdigest()


def secret_matches(path: str, data: bytes) -> Iterator[SecretMatch]:
    """Every match in the file at ``path`` (posix, relative), by name then by content."""
    name = path.rsplit("/", 1)[-1]
    lowered = name.lower()
    if (lowered == ".env" or lowered.startswith(".env.")) and not (
            lowered.endswith(_ENV_EXAMPLE_SUFFIXES) and lowered.count(".") >= 2):
        yield SecretMatch(".env file", fingerprint(data))
    if name in _SSH_KEY_NAMES:
        yield SecretMatch("SSH private key file name", fingerprint(data))
    found = False
    for match in (_SECRET_RE.finditer(data) if any(literal in data for literal in
                                                   _SECRET_LITERALS) else ()):
        kind = match.lastgroup
        if kind is None or _is_placeholder(kind, match.group(kind)):
            continue
        found = True
        yield SecretMatch(_REASONS[kind], fingerprint(match.group(kind)))
    if any(needle in data for needle in _AWS_SECRET_NAMES):
        for match in _AWS_SECRET_RE.finditer(data):
            if not _is_placeholder("awssecret", match.group("awssecret")):
                found = True
                yield SecretMatch(_REASONS["awssecret"], fingerprint(match.group("awssecret")))
    if not found and lowered.endswith(_KEY_FILE_SUFFIXES):
        header = _PEM_HEADER_RE.search(data)
        if header is not None:
            yield SecretMatch("private key file", fingerprint(data))


def secret_problem(path: str, data: bytes, allowed: frozenset[str] = frozenset()) -> str | None:
    """A short reason when the file at ``path`` holds a match not in ``allowed``."""
    match = next((m for m in secret_matches(path, data) if m.fingerprint not in allowed), None)
    return None if match is None else match.reason


#: Only the committed library.yaml applies: an edit left uncommitted allows nothing.
COMMIT_POLICY = "then commit library.yaml (only its committed policy applies)"


def secret_refusal(path: str, data: bytes, allowed: tuple[str, ...]) -> str | None:
    """The refusal for the first match not allowed, with the policy line that would allow
    exactly it, ready to paste into library.yaml (and the reminder to commit it); None
    when nothing (else) matches."""
    allowing = frozenset(allowed)
    for match in secret_matches(path, data):
        if match.fingerprint not in allowing:
            return (f"{path}: looks like a secret ({match.reason}); if it is not one, allow "
                    f"exactly this match in library.yaml: policy: {{allowed_secrets: "
                    f"[{match.fingerprint}]}}, {COMMIT_POLICY}")
    return None


def _is_placeholder(kind: str, token: bytes) -> bool:
    if kind == "pem":
        return False
    if kind == "aws" and token.endswith(b"EXAMPLE"):  # AWS's own documentation keys
        return True
    if kind == "awssecret":
        # AWS documents wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
        return b"EXAMPLE" in token or len(set(token)) < _MIN_DISTINCT
    body = token[4:] if kind in ("aws", "google") else token[8:]  # past the fixed prefix
    return len(set(body)) < _MIN_DISTINCT
