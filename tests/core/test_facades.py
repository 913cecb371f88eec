"""The public names of git, cache, library and txn: typed and lazily loaded, the same list."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGES = ("git", "cache", "library", "txn")
ROOT = Path(__file__).resolve().parents[2] / "librarian"


def _declared(package: str) -> tuple[dict[str, str], dict[str, str]]:
    """(the names imported for the type checker, the names of the lazy map), name -> module."""
    tree = ast.parse((ROOT / package / "__init__.py").read_text())
    typed: dict[str, str] = {}
    lazy: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(
                f"librarian.{package}."):
            for alias in node.names:
                assert alias.asname == alias.name, "re-exported as itself"
                typed[alias.name] = node.module.rsplit(".", 1)[1]
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "lazy_exports":
            table = node.args[1]
            assert isinstance(table, ast.Dict)
            for key, value in zip(table.keys, table.values, strict=True):
                assert isinstance(key, ast.Constant) and isinstance(value, ast.Constant)
                lazy[key.value] = value.value
    return typed, lazy


@pytest.mark.parametrize("package", PACKAGES)
def test_the_typed_names_and_the_lazy_map_agree(package: str) -> None:
    typed, lazy = _declared(package)
    assert typed == lazy and typed


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves_to_its_module(package: str) -> None:
    facade = importlib.import_module(f"librarian.{package}")
    for name, module in _declared(package)[1].items():
        value = getattr(facade, name)
        home = importlib.import_module(f"librarian.{package}.{module}")
        assert value is getattr(home, name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    import librarian.git

    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        _ = librarian.git.NoSuchThing  # type: ignore[attr-defined]


def test_a_name_loads_only_its_module() -> None:
    """``from librarian.git import GitStore`` does not load the fetch, fsck or tag code."""
    code = ("import sys; from librarian.git import GitStore; "
            "print(sorted(m for m in sys.modules if m.startswith('librarian.git.')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout
    for heavy in ("transfer", "fsck", "tags", "remote", "localfetch"):
        assert f"librarian.git.{heavy}'" not in loaded
    assert "librarian.git.repo'" in loaded
