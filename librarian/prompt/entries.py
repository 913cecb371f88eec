"""The agent registry as values: listed skills, resident bodies, recipes, tool contracts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from librarian.core.jsonable import to_jsonable
from librarian.gate.tools import ToolContract, ToolInput


@dataclass(frozen=True, slots=True)
class SkillEntry:
    name: str
    description: str
    location: str  # absolute path of SKILL.md
    state: str  # retained | managed
    resident: bool = False


@dataclass(frozen=True, slots=True)
class ResidentSkill:
    name: str
    location: str
    body: str


@dataclass(frozen=True, slots=True)
class RecipeEntry:
    name: str
    environment: str
    execution: str
    state: str


@dataclass(frozen=True, slots=True)
class Registry:
    tree: str | None
    skills: tuple[SkillEntry, ...]
    resident: tuple[ResidentSkill, ...]
    recipes: tuple[RecipeEntry, ...]
    tools: tuple[ToolContract, ...]
    hidden: tuple[str, ...]
    problems: tuple[str, ...]
    #: the roots of the layers read together, nearest first (``librarian.layers``); empty
    #: for one library
    layers: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = to_jsonable(self)
        return document

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Registry:
        tools = []
        for tool in doc["tools"]:
            inputs = tuple(ToolInput(**i) for i in tool.pop("inputs"))
            tools.append(ToolContract(**tool, inputs=inputs))
        return cls(
            tree=doc["tree"],
            skills=tuple(SkillEntry(**s) for s in doc["skills"]),
            resident=tuple(ResidentSkill(**r) for r in doc["resident"]),
            recipes=tuple(RecipeEntry(**r) for r in doc["recipes"]),
            tools=tuple(tools),
            hidden=tuple(doc["hidden"]),
            problems=tuple(doc["problems"]),
            layers=tuple(doc.get("layers", ())),
        )
