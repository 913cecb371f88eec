"""The foundation and skill-lifecycle operations, one public function per command: init,
retain, status, inspect/cat, diff, log, check, hooks, promote/discard/defer, review,
revise/retire/restore, hide/show/resident.

May import: ``librarian.sources`` and everything below it."""
