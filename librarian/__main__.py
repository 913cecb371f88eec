from librarian.cli.main import entry

entry()
