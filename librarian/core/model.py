"""Immutable values shared across the library: where items live, the policy, an item's
files. The parsed manifests and validated content are in ``core/manifests.py``, which
only the commands that read or validate manifests import (a ``status`` does not)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

ItemKind = Literal["skill", "recipe"]

#: Where each kind lives once retained; drafts of either kind live in ``drafts/``.
KIND_DIRS: Mapping[ItemKind, str] = {"skill": "skills", "recipe": "recipes"}
DRAFTS_DIR = "drafts"
SOURCES_DIR = "sources"
MANIFEST_FILES: Mapping[ItemKind, str] = {"skill": "SKILL.md", "recipe": "recipe.yaml"}


Conformance = Literal["warn", "strict"]
CONFORMANCE_LEVELS: tuple[Conformance, ...] = ("warn", "strict")


@dataclass(frozen=True, slots=True)
class Policy:
    """``library.yaml`` ``policy:``: bounds (spec §2 defaults), how nonconforming content is
    judged, and the fingerprints of secret-scan matches that are not secrets."""

    max_exposed_tools: int = 64
    max_item_bytes: int = 16 * 1024 * 1024
    max_item_files: int = 2000
    max_file_bytes: int = 8 * 1024 * 1024
    #: "warn": nonconforming content is admitted with a warning; "strict": refused
    conformance: Conformance = "warn"
    #: ``sha256:<hex>`` of matched text the secret scan must let through
    allowed_secrets: tuple[str, ...] = ()
    #: the writable memory (``RLIMIT_DATA``) of each process of a run and the user's
    #: process count (``RLIMIT_NPROC``)
    run_memory_mb: int = 4096
    run_processes: int = 4096


#: Policy keys that are whole-number bounds (the others are checked by their own rules)
BOUND_KEYS = ("max_exposed_tools", "max_item_bytes", "max_item_files", "max_file_bytes")
#: Whole-number policy keys written only when they differ from the default
RUN_LIMIT_KEYS = ("run_memory_mb", "run_processes")


@dataclass(frozen=True, slots=True)
class ItemFile:
    """One file of an item: posix path relative to the item directory."""

    path: str
    executable: bool
    data: bytes = field(repr=False)
