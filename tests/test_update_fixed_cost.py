"""What ``update`` pays that is not its work: the modules it imports, and an update with
nothing new upstream (issue 12, fixed cost)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import run_main
from sources_helpers import Upstream

Cap = pytest.CaptureFixture[str]

#: Never imported by an update of unsigned sources that merges nothing and forces nothing.
NOT_NEEDED = ("cryptography", "librarian.trust", "librarian.store.merge",
              "librarian.sources.backups", "librarian.sources.merging",
              "librarian.content.patch", "librarian.core.receipts")


def _modules_after(library: Path, *args: str) -> tuple[int, set[str]]:
    """Run one command in a fresh interpreter; its exit code and every module it loaded."""
    code = ("import json, sys\nfrom librarian.cli.main import main\n"
            f"try:\n    main(['--library', {str(library)!r}, *{list(args)!r}])\n"
            "except SystemExit as exc:\n    code = exc.code or 0\nelse:\n    code = 0\n"
            "sys.stderr.write('\\n' + json.dumps([code, sorted(sys.modules)]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    exit_code, modules = json.loads(done.stderr.rsplit("\n", 1)[-1])
    return exit_code, set(modules)


def _loaded(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


@pytest.fixture
def subscribed(tmp_path: Path, library: Path, capsys: Cap) -> tuple[Path, Upstream]:
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/pdf").skill("skills/docx").recipe("recipes/review")
    up.commit("first")
    assert run_main(capsys, "--library", str(library), "source", "add", "team",
                    up.url).code == 0
    return library, up


def test_an_unsigned_update_imports_no_trust_merge_or_json_machinery(
        subscribed: tuple[Path, Upstream]) -> None:
    library, up = subscribed
    for step in ("install", "change", "nothing new"):
        if step == "change":
            up.skill("skills/pdf", body="Do it better.\n").commit("second")
        code, modules = _modules_after(library, "update")
        assert code == 0, step
        loaded = [name for name in NOT_NEEDED if _loaded(modules, name)]
        assert loaded == [], f"{step}: {loaded}"
    # --json needs the JSON conversion (and the receipts), still not the trust machinery
    code, modules = _modules_after(library, "update", "--json")
    assert code == 0
    assert _loaded(modules, "librarian.core.jsonable")
    assert not _loaded(modules, "librarian.trust") and not _loaded(modules, "cryptography")
