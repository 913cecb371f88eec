"""The few things librarian asks of git's own rules and configuration: whether a name is a
branch git would accept, a repository's ``core.worktree``, ``core.hooksPath`` and the
identity it commits as; the settings of a new repository. Over dulwich, so that the
layers above never import it."""

from __future__ import annotations

import os
from pathlib import Path

from dulwich.config import ConfigFile, StackedConfig
from dulwich.refs import Ref, check_ref_format
from dulwich.repo import Repo


def is_branch_ref(name: str) -> bool:
    """A branch name git itself would accept (``check_ref_format``: no ``..``, no control
    characters, …); any such name, ``feat+ü`` included, is one librarian may have written."""
    return name.startswith("refs/heads/") and check_ref_format(
        Ref(name.encode("utf-8", "surrogateescape")))


def core_worktree(git_dir: Path) -> str | None:
    """``core.worktree`` of the repository at ``git_dir``; None when unset or unreadable."""
    try:
        config = ConfigFile.from_path(str(git_dir / "config"))
        if config.has_section((b"core",)) and (b"worktree" in config[(b"core",)]):
            return config.get((b"core",), b"worktree").decode("utf-8", "replace")
    except (OSError, ValueError, KeyError):
        return None
    return None


def hooks_path(git_dir: Path) -> str | None:
    """``core.hooksPath`` as git sees it for the repository at ``git_dir`` (its own config,
    then the user's and the system's), or None."""
    configs = []
    try:
        configs.append(ConfigFile.from_path(str(git_dir / "config")))
    except (OSError, ValueError):
        pass
    try:
        configs += StackedConfig.default_backends()
    except (OSError, ValueError):
        pass
    for config in configs:
        try:
            value = config.get((b"core",), b"hookspath")
        except KeyError:
            continue
        return os.fsdecode(value) if value else None
    return None


FALLBACK_IDENTITY = b"librarian <librarian@localhost>"


def commit_identity(config: StackedConfig) -> bytes:
    """``user.name <user.email>`` of git's configuration, else librarian's own."""
    try:
        name = config.get((b"user",), b"name")
        email = config.get((b"user",), b"email")
    except KeyError:
        return FALLBACK_IDENTITY
    return bytes(name) + b" <" + bytes(email) + b">"


def init_repository(root: Path, branch: bytes) -> None:
    """A new repository in the existing directory ``root``, HEAD on ``branch``."""
    repo = Repo.init(str(root), mkdir=False)
    repo.refs.set_symbolic_ref(Ref(b"HEAD"), Ref(branch))
    config = repo.get_config()
    # Foreground auto-gc would repack the whole store in pure Python (see
    # docs/decisions.md); librarian never needs it and git users can run gc themselves.
    config.set((b"gc",), b"auto", b"0")
    config.set((b"core",), b"autocrlf", b"false")
    config.write_to_path()
    repo.close()
