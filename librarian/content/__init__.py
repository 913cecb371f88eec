"""Item content: reading a source directory, validating an item against the formats and
the bounds, the secret scan, unified patches, reading and writing work-tree files.

May import: ``librarian.formats``, ``librarian.core``, ``librarian.errors``."""
