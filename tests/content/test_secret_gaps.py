"""Secret-scan gaps an adversarial review found, with the negative controls that must pass.

Fixtures are assembled at run time so this file itself never looks like it holds secrets.
"""

from __future__ import annotations

import pytest

from librarian.content.secretscan import secret_problem

SECRET = "kT9" + "vQ2mZx7Lr4Hs8Wd1Np6Bc3Yf5Jg0Ue/Ai+Ro7"  # 40 characters, mixed
assert len(SECRET) == 40
AWS_DOC_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
BEGIN = "-----BEGIN "


@pytest.mark.parametrize("text", [
    f"aws_secret_access_key = {SECRET}\n",
    f"[default]\naws_secret_access_key={SECRET}\n",
    f"export AWS_SECRET_ACCESS_KEY={SECRET}\n",
    f'AWS_SECRET_ACCESS_KEY: "{SECRET}"\n',
    f'{{"awsSecretAccessKey": "{SECRET}"}}\n',
    f"credentials:\n  aws_secret_access_key: '{SECRET}'\n",
])
def test_aws_secret_without_key_id_is_found(text: str) -> None:
    assert secret_problem("config/credentials", text.encode()) == "AWS secret access key"


@pytest.mark.parametrize("text", [
    f"aws_secret_access_key = {AWS_DOC_SECRET}\n",  # AWS's documentation example
    "aws_secret_access_key = " + "x" * 40 + "\n",
    "aws_secret_access_key = <your secret here>\n",
    "Set aws_secret_access_key in ~/.aws/credentials.\n",
    f"aws_secret_access_key = {SECRET}ABC\n",  # longer than a key: not one
])
def test_aws_secret_placeholders_pass(text: str) -> None:
    assert secret_problem("README.md", text.encode()) is None


def test_negative_controls_are_admitted() -> None:
    prose = (f"To sign, paste a key that starts with `{BEGIN}PRIVATE KEY-----`.\n"
             f"{BEGIN}PRIVATE KEY-----\n(your key goes here)\n").encode()
    assert secret_problem("README.md", prose) is None
    assert secret_problem("docs.md", b"aws_access_key_id = AKIA" + b"IOSFODNN7EXAMPLE\n") is None
    assert secret_problem(".env.local.example", b"TOKEN=\n") is None
    assert secret_problem("x/.env.production.sample", b"TOKEN=\n") is None
    cert = (f"{BEGIN}CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n"
            "-----END CERTIFICATE-----\n").encode()
    assert secret_problem("ca.pem", cert) is None
    assert secret_problem("certs/ca.crt", cert) is None


def test_env_files_that_are_not_examples_are_still_found() -> None:
    for path in (".env", ".env.local", ".env.example.local", ".env.production"):
        assert secret_problem(path, b"A=1\n") == ".env file", path
