from librarian.cli.entry import entry

entry()
