"""Opening the stack of layers a reading command sees (see the package's docstring)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from librarian.errors import UsageError
from librarian.library import GeneratedFiles, Library, find_library, open_library

#: Where each layer came from, as ``inspect`` and ``check`` say it.
Origin = str  # "project" (a library in a folder) | "nearest" | "--layer" | "config" | "user"

#: The user's own library when the user config names none: Codex's user skills root.
USER_FOLDER = ".agents"


@dataclass(frozen=True, slots=True)
class Layer:
    library: Library
    origin: Origin

    @property
    def label(self) -> str:
        return f"{self.origin} {self.library.root}"


@dataclass(frozen=True, slots=True)
class Stack:
    """The layers, nearest first; never empty."""

    layers: tuple[Layer, ...]

    @property
    def nearest(self) -> Library:
        return self.layers[0].library

    @property
    def layered(self) -> bool:
        return len(self.layers) > 1


def open_stack(explicit: Path | None = None, extra: Sequence[Path] = (), *,
               cwd: Path | None = None,
               generated: tuple[GeneratedFiles, ...] = ()) -> Stack:
    """The nearest library (``find_library``) over the ``extra`` layers (``--layer``); when
    the nearest was found rather than named (no ``--library``, no ``$LIBRARIAN_LIBRARY``),
    also the user config's ``layers:`` and the user's library. A library listed twice is
    one layer, at its nearest place; a layer that is no library is exit 2."""
    nearest = find_library(explicit, cwd, generated)
    named = explicit is not None or bool(os.environ.get("LIBRARIAN_LIBRARY"))
    layers = [Layer(nearest, "project" if nearest.prefix else "nearest")]
    layers += [Layer(_open(path, generated, "--layer"), "--layer") for path in extra]
    if not named:
        layers += _configured(generated)
    return Stack(tuple(_unique(layers)))


def _open(path: Path, generated: tuple[GeneratedFiles, ...], where: str) -> Library:
    root = path.expanduser().absolute()
    library = open_library(root, generated)
    if library is None:
        raise UsageError(f"{root} ({where}) is not a library",
                         hint="create one with `librarian init PATH`, or drop the layer")
    return library


def _configured(generated: tuple[GeneratedFiles, ...]) -> list[Layer]:
    """The layers of the user config file, then the user's library. Read only when the
    file exists (a command in a library without one never imports the YAML parser)."""
    from librarian.formats.userconfig import config_path, load_user_config

    found: list[Layer] = []
    if config_path().is_file():
        config = load_user_config()
        found += [Layer(_open(path, generated, f"layers: in {config_path()}"), "config")
                  for path in config.layers]
        if config.library is not None:
            found.append(Layer(_open(config.library, generated,
                                     f"library: in {config_path()}"), "user"))
            return found
    home = Path.home() / USER_FOLDER
    library = open_library(home, generated)
    if library is not None:
        found.append(Layer(library, "user"))
    return found


def _unique(layers: Iterable[Layer]) -> Iterable[Layer]:
    seen: set[Path] = set()
    for layer in layers:
        if layer.library.root not in seen:
            seen.add(layer.library.root)
            yield layer
