"""librarian: an agent's skills and capabilities in a git repository, managed like packages.

The public API is small on purpose; command modules hold the rest::

    from librarian import find_library, init_library, retain, library_status
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Imported lazily: `librarian status` must not pay for modules it does not use.
_EXPORTS = {
    "LibrarianError": "errors",
    "UsageError": "errors",
    "ConflictError": "errors",
    "TrustError": "errors",
    "GateRefusal": "errors",
    "Library": "library.layout",
    "find_library": "library.layout",
    "init_library": "ops.create",
    "retain": "ops.retention",
    "library_status": "ops.status",
    "inspect_library": "ops.inventory",
    "cat_item": "ops.inventory",
    "diff_library": "ops.diffing",
    "read_log": "ops.history",
    "check_library": "ops.checking",
}

if TYPE_CHECKING:
    from librarian.errors import ConflictError as ConflictError
    from librarian.errors import GateRefusal as GateRefusal
    from librarian.errors import LibrarianError as LibrarianError
    from librarian.errors import TrustError as TrustError
    from librarian.errors import UsageError as UsageError
    from librarian.library import Library as Library
    from librarian.library import find_library as find_library
    from librarian.ops.checking import check_library as check_library
    from librarian.ops.create import init_library as init_library
    from librarian.ops.diffing import diff_library as diff_library
    from librarian.ops.history import read_log as read_log
    from librarian.ops.inventory import cat_item as cat_item
    from librarian.ops.inventory import inspect_library as inspect_library
    from librarian.ops.retention import retain as retain
    from librarian.ops.status import library_status as library_status


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'librarian' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"librarian.{module}"), name)


__all__ = sorted(_EXPORTS)
