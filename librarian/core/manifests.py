"""Immutable values of parsed manifests (SKILL.md, recipe.yaml) and of validated item
content, ready to be written. Kept apart from ``core/model.py`` so that a command that
never parses a manifest (``status``) does not create their classes when it starts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from librarian.core.digest import content_digest
from librarian.core.model import ItemFile, ItemKind


@dataclass(frozen=True, slots=True)
class Nonconformity:
    """Content that breaks a rule of the Agent Skills format real clients tolerate (spec
    §2): admitted with a warning naming the rule, refused under ``conformance: strict``.
    Rule names are those of the reference validator's checks (skills-ref)."""

    rule: str
    message: str

    def warning(self, file: str) -> str:
        return f"{file}: nonconforming [{self.rule}]: {self.message}"


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class RecipeInput:
    name: str
    type: InputType
    required: bool = False
    default: object = None
    description: str | None = None
    #: a ``path`` input the recipe may write (run confinement grants it; docs/execution.md)
    writable: bool = False


@dataclass(frozen=True, slots=True)
class RecipeEffects:
    filesystem: Literal["none", "read", "write"] | None = None
    network: bool | None = None


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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
