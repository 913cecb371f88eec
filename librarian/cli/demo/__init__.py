"""The guided tour (``librarian demo``): one chapter per capability, each calling the same
library functions as the commands.

May import: everything ``librarian.cli`` may, and ``librarian.cli.render``."""
