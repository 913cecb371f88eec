"""Layered libraries: a stack of libraries read together, nearest first.

The nearest layer is the library a command would work on (a project's ``.agents``, found
from the current directory, or the one ``--library`` names); below it the libraries given
by ``--layer PATH`` (repeatable), then those of ``layers:`` in the user config file, then
the user's own library (``library:`` there, or ``~/.agents`` when it is one). ``stack``
opens the stack; ``union`` answers the reading commands over it: the agent registry
(``prompt``, ``mcp``) with the nearer layer winning a name, the layer that holds a name
(``cat``, ``run``, ``inspect NAME``) and the names a nearer layer shadows (``check``).

Changing commands never see a stack: they write to the nearest layer (``--library`` names
another). The gate and its approvals stay per layer: a name is run in the layer that holds
it, with that layer's approvals, so an approval in one layer never runs another's recipe.

May import: ``librarian.ops`` and every package below it."""
