"""Value objects and pure helpers every layer shares: names, items and receipts, events and
their trailers, the digest, JSON conversion, durable file writes, shipped resources.

May import: the standard library and ``librarian.errors`` only."""
