"""Every change to a library: ``Transaction`` (one commit, staged, swapped in, journaled),
its changes, staging, the swap and its undo (``apply``), the journal, recovery after a
crash, the leftovers a killed command leaves, and the mutation lock.

May import: ``librarian.library``, ``librarian.cache``, ``librarian.git`` and the
packages below them. Other packages import the names below, not its modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from librarian.core.lazy import lazy_exports

if TYPE_CHECKING:
    from librarian.txn.changes import CommitResult as CommitResult
    from librarian.txn.changes import FileChange as FileChange
    from librarian.txn.changes import TreeChange as TreeChange
    from librarian.txn.lock import library_lock as library_lock
    from librarian.txn.recovery import recover_library as recover_library
    from librarian.txn.transaction import Transaction as Transaction

__getattr__ = lazy_exports(__name__, {
    "CommitResult": "changes",
    "FileChange": "changes",
    "Transaction": "transaction",
    "TreeChange": "changes",
    "library_lock": "lock",
    "recover_library": "recovery",
})
