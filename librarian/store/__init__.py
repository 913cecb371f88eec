"""The library as a git repository, over dulwich: objects and refs, the index splice,
fetching a source, the committed view of a commit, the transaction and its recovery, the
mutation lock and the caches under ``.git/librarian/``. All git access lives here.

May import: ``librarian.content``, ``librarian.formats``, ``librarian.core``,
``librarian.errors``, dulwich."""
