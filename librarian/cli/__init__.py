"""The command line: the typer app, the one place errors become exit codes, one module per
command group, human rendering, and the demo. A command parses, calls one library
function, prints.

May import: everything below it; nothing imports it."""
