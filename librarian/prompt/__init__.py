"""The agent registry: which skills, capabilities and tools the agent sees, built from a
committed tree, cached by its id, rendered as XML, Markdown or JSON.

May import: ``librarian.gate`` and everything below it."""
