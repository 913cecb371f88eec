"""Shared libraries: subscriptions (source add/list/remove), the validated upstream
collection, the per-item plan, update and outdated, backups of overwritten edits.

May import: ``librarian.prompt`` and everything below it."""
