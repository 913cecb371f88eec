"""Exposure and the execution gate: tools.yaml state, expose/withdraw, approvals by
digest, the refusals of ``run``, the runner and its async supervisor, run records, the
usage ledger, execution environments.

May import: ``librarian.store`` and everything below it."""
