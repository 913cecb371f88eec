"""Immutable value objects shared across the library: item content and manifests."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from librarian.core.digest import content_digest

ItemKind = Literal["skill", "recipe"]

#: Where each kind lives once retained; drafts of either kind live in ``drafts/``.
KIND_DIRS: Mapping[ItemKind, str] = {"skill": "skills", "recipe": "recipes"}
DRAFTS_DIR = "drafts"
SOURCES_DIR = "sources"
MANIFEST_FILES: Mapping[ItemKind, str] = {"skill": "SKILL.md", "recipe": "recipe.yaml"}


Conformance = Literal["warn", "strict"]
CONFORMANCE_LEVELS: tuple[Conformance, ...] = ("warn", "strict")


@dataclass(frozen=True)
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


#: Policy keys that are whole-number bounds (the others are checked by their own rules)
BOUND_KEYS = ("max_exposed_tools", "max_item_bytes", "max_item_files", "max_file_bytes")


@dataclass(frozen=True)
class Nonconformity:
    """Content that breaks a rule of the Agent Skills format real clients tolerate (spec
    §2): admitted with a warning naming the rule, refused under ``conformance: strict``.
    Rule names are those of the reference validator's checks (skills-ref)."""

    rule: str
    message: str

    def warning(self, file: str) -> str:
        return f"{file}: nonconforming [{self.rule}]: {self.message}"


@dataclass(frozen=True)
class ItemFile:
    """One file of an item: posix path relative to the item directory."""

    path: str
    executable: bool
    data: bytes = field(repr=False)


@dataclass(frozen=True)
class SkillManifest:
    name: str
    description: str
    license: str | None = None
    compatibility: str | None = None
    metadata: tuple[tuple[str, str], ...] = ()
    allowed_tools: str | None = None
    #: frontmatter keys the Agent Skills spec does not define: kept in the file, warned about
    unknown_keys: tuple[str, ...] = ()
    body: str = field(default="", repr=False)
    #: rules of the format the frontmatter breaks (those about the directory come later)
    nonconforming: tuple[Nonconformity, ...] = ()


InputType = Literal["string", "integer", "number", "boolean", "path"]


@dataclass(frozen=True)
class RecipeInput:
    name: str
    type: InputType
    required: bool = False
    default: object = None
    description: str | None = None


@dataclass(frozen=True)
class RecipeEffects:
    filesystem: Literal["none", "read", "write"] | None = None
    network: bool | None = None


@dataclass(frozen=True)
class RecipeManifest:
    name: str
    description: str
    execution: Literal["sync", "async"]
    environment: Literal["shell", "python", "docker", "wasm"]
    entrypoint: str
    inputs: tuple[RecipeInput, ...] = ()
    result: str | None = None
    effects: RecipeEffects | None = None
    timeout: int | None = None


Manifest = SkillManifest | RecipeManifest


@dataclass(frozen=True)
class ItemContent:
    """A validated item, ready to be written: files sorted by path."""

    kind: ItemKind
    name: str
    files: tuple[ItemFile, ...]
    manifest: Manifest
    warnings: tuple[str, ...] = ()

    @property
    def digest(self) -> str:
        return content_digest((f.path, f.executable, f.data) for f in self.files)

    @property
    def total_bytes(self) -> int:
        return sum(len(f.data) for f in self.files)
