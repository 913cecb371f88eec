"""``librarian mcp`` is an optional extra: without it the command says how to install it,
and no other command ever imports the SDK (it costs about half a second)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_without_the_extra_mcp_says_how_to_install_it(library: Path) -> None:
    code = ("import sys; sys.modules['mcp'] = None; from librarian.cli.main import main; "
            f"sys.exit(main(['--library', {str(library)!r}, 'mcp']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert "pip install 'agent-librarian[mcp]'" in done.stderr  # the distribution's name
    assert done.stdout == ""


def test_no_other_command_imports_the_sdk(library: Path) -> None:
    code = ("import sys; from librarian.cli.main import main\n"
            f"for args in (['--help'], ['--library', {str(library)!r}, 'prompt'],\n"
            f"             ['--library', {str(library)!r}, 'export', 'codex-config']):\n"
            "    try: main(args)\n"
            "    except SystemExit: pass\n"
            "assert 'mcp' not in sys.modules, 'mcp imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
