"""A package's public names, imported from its modules on first use (PEP 562).

The packages over git (``git``, ``cache``, ``library``, ``txn``) each offer a small public
surface in their ``__init__``; importing every module behind it on the first
``from librarian.git import GitStore`` would load the fetch, fsck and tag code (and
certifi, through dulwich's HTTP client) into every ``status``. The package's ``__init__``
lists its names once for the type checker (``if TYPE_CHECKING: from .repo import GitStore
as GitStore``) and once as the map this module reads; ``tests/core/test_facades.py`` holds
the two in step and checks that a name loads only its own module.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: ``name`` read from ``package.<exports[name]>``
    on first use, then kept on the package so the next read is an ordinary attribute."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
