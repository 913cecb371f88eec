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
    "Library": "library",
    "find_library": "library",
    "init_library": "create",
    "retain": "retention",
    "library_status": "status",
    "inspect_library": "inventory",
    "cat_item": "inventory",
    "diff_library": "diffing",
    "read_log": "history",
    "check_library": "checking",
}

if TYPE_CHECKING:
    from .checking import check_library as check_library
    from .create import init_library as init_library
    from .diffing import diff_library as diff_library
    from .errors import ConflictError as ConflictError
    from .errors import GateRefusal as GateRefusal
    from .errors import LibrarianError as LibrarianError
    from .errors import TrustError as TrustError
    from .errors import UsageError as UsageError
    from .history import read_log as read_log
    from .inventory import cat_item as cat_item
    from .inventory import inspect_library as inspect_library
    from .library import Library as Library
    from .library import find_library as find_library
    from .retention import retain as retain
    from .status import library_status as library_status


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'librarian' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"librarian.{module}"), name)


__all__ = sorted(_EXPORTS)
