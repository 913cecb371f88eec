"""The user's own configuration file: ``$XDG_CONFIG_HOME/librarian/config.yaml`` (else
``~/.config/librarian/config.yaml``; ``%APPDATA%\\librarian\\config.yaml`` on Windows).

It holds two settings: the default library, also the user's layer, and the libraries
layered between a project's library and the user's (``librarian.layers``), nearest first::

    library: ~/agents/library
    layers:
      - ~/work/team-library

``library`` is used when neither ``--library`` nor ``$LIBRARIAN_LIBRARY`` is given and the
current directory is not inside a library. Read with the project's safe YAML loader.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from librarian.errors import UsageError
from librarian.formats.yamlio import load_yaml

MAX_CONFIG_BYTES = 64 * 1024


def config_path() -> Path:
    """Where the user config file is on this platform (it need not exist)."""
    if sys.platform == "win32" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / "librarian" / "config.yaml"
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "librarian" / "config.yaml"


@dataclass(frozen=True, slots=True)
class UserConfig:
    library: Path | None = None
    layers: tuple[Path, ...] = ()


def load_user_config(path: Path | None = None) -> UserConfig:
    """The user config; an absent file is the empty config, a broken one exit 2."""
    path = path or config_path()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return UserConfig()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    document = load_yaml(data, str(path), max_bytes=MAX_CONFIG_BYTES)
    if document is None:
        return UserConfig()
    if not isinstance(document, dict):
        raise UsageError(f"{path}: expected a mapping such as 'library: PATH'")
    unknown = sorted(str(k) for k in document if k not in ("library", "layers"))
    if unknown:
        raise UsageError(f"{path}: unknown setting(s) {', '.join(unknown)}",
                         hint="the settings are 'library: PATH' and 'layers: [PATH, ...]'")
    library = document.get("library")
    if library is not None and not isinstance(library, str):
        raise UsageError(f"{path}: 'library' must be a path (a string)")
    layers = document.get("layers") or []
    if not isinstance(layers, list) or not all(isinstance(p, str) and p for p in layers):
        raise UsageError(f"{path}: 'layers' must be a list of paths (strings)")
    return UserConfig(Path(library).expanduser() if library else None,
                      tuple(Path(p).expanduser() for p in layers))
