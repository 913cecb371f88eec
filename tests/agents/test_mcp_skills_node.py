"""Hosts of the MCP skills extension other than our own tests read ``librarian mcp``:
``SkillsClient`` of the TypeScript SDK (``@modelcontextprotocol/client`` 2.4) lists, gets
and verifies every file of a library holding retained, managed and hidden skills (with
``yes`` and a date in a frontmatter) in both protocol eras, and the MCP Inspector CLI's
``--method skills/list --verify --require-digests`` exits 0, then 7 once one served byte
differs from the digest the entry lists. Skipped without ``node``/``npm`` or when the
packages cannot be installed (offline)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import pytest
from support.helpers import cli_ok, git, make_skill, write
from support.sources_helpers import Upstream, install

pytest.importorskip("mcp", reason="the mcp extra is not installed")
PACKAGES = ("@modelcontextprotocol/client@2.4.0", "@modelcontextprotocol/inspector@2.12.0")
HOST = Path(__file__).parent / "node" / "skills_host.mjs"
Cap = pytest.CaptureFixture[str]


@pytest.fixture(scope="module")
def node_modules() -> Path:
    """The two packages, installed once into a cache directory under the temp dir."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not on PATH")
    cache = Path(tempfile.gettempdir()) / "librarian-test-node-skills"
    marker = cache / "installed.json"
    if not marker.is_file() or json.loads(marker.read_text()) != list(PACKAGES):
        cache.mkdir(parents=True, exist_ok=True)
        (cache / "package.json").write_text('{"private": true}\n')
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts",
             "--cache", str(cache / "npm-cache"), *PACKAGES],
            cwd=cache, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            pytest.skip(f"npm install failed (offline?): {done.stderr.strip()[-300:]}")
        marker.write_text(json.dumps(list(PACKAGES)))
    shutil.copy(HOST, cache / "skills_host.mjs")
    return cache


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def build(library: Path, sources: Path, capsys: Cap, tmp_path: Path) -> None:
    cli_ok(capsys, library, "retain", str(make_skill(
        sources, "alpha", extra_files={"references/guide.md": "Read me.\n",
                                       "assets/logo.bin": b"\x00\xff\x00\r\n"})))
    write(sources / "beta" / "SKILL.md",
          "---\nname: beta\ndescription: Dates and yes stay strings.\nbeta: yes\n"
          "when: 2026-01-02\ntime: 1:30\n---\nBody.\n")
    cli_ok(capsys, library, "retain", str(sources / "beta"))
    cli_ok(capsys, library, "retain", str(make_skill(sources, "secret")))
    cli_ok(capsys, library, "hide", "secret")
    upstream = Upstream(tmp_path / "up").skill("skills/alpha").skill("skills/gamma")
    upstream.commit()
    install(capsys, library, upstream, source="team")


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_skills_client_lists_gets_and_verifies_every_file(
    node_modules: Path, library: Path, sources: Path, capsys: Cap, tmp_path: Path, mode: str
) -> None:
    build(library, sources, capsys, tmp_path)
    done = subprocess.run(
        ["node", str(node_modules / "skills_host.mjs"), sys.executable, str(library), mode,
         "skill://library/secret/SKILL.md"],
        cwd=node_modules, env=environment(), capture_output=True, text=True, timeout=180,
        check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["version"] == ("2025-11-25" if mode == "legacy" else mode)
    assert report["supported"] and report["directoryRead"]
    assert [s["uri"] for s in report["skills"]] == [
        "skill://library/alpha/SKILL.md", "skill://library/beta/SKILL.md",
        "skill://sources/team/alpha/SKILL.md", "skill://sources/team/gamma/SKILL.md"]
    assert all(f["verified"] for s in report["skills"] for f in s["files"])
    assert sum(len(s["files"]) for s in report["skills"]) == 6
    beta = report["skills"][1]["frontmatter"]
    assert beta["beta"] == "yes" and beta["when"] == "2026-01-02" and beta["time"] == "1:30"
    assert report["hidden"] == {"uri": "skill://library/secret/SKILL.md", "verified": True}
    assert "secret" not in json.dumps(report["skills"])


def inspector(node_modules: Path, library: Path) -> subprocess.CompletedProcess[str]:
    launcher = (node_modules / "node_modules" / "@modelcontextprotocol" / "inspector" /
                "clients" / "launcher" / "build" / "index.js")
    return subprocess.run(
        ["node", str(launcher), "--cli", "--method", "skills/list", "--verify",
         "--require-digests", sys.executable, "-m", "librarian", "--library", str(library),
         "mcp"],
        env=environment(), capture_output=True, text=True, timeout=180, check=False)


def test_inspector_verifies_the_catalog_and_catches_one_changed_byte(
    node_modules: Path, library: Path, sources: Path, capsys: Cap, tmp_path: Path
) -> None:
    build(library, sources, capsys, tmp_path)
    first = inspector(node_modules, library)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    assert '"outcome":"verified"' in first.stdout
    # One served byte changed under the same blob id (a damaged object file): the digest
    # remembered for that blob no longer matches what is served.
    blob = git(library, "rev-parse", "HEAD:skills/alpha/references/guide.md"
               ).stdout.decode().strip()
    loose = library / ".git" / "objects" / blob[:2] / blob[2:]
    assert loose.is_file()
    loose.chmod(0o644)
    loose.write_bytes(zlib.compress(b"blob 9\0Read mX.\n"))
    second = inspector(node_modules, library)
    assert second.returncode == 7, second.stdout[-2000:] + second.stderr[-2000:]
