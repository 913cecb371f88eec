"""Rendering the agent registry as XML (the Agent Skills reference shape), Markdown or JSON,
optionally within a character budget.

``<available_skills>`` is emitted exactly as the Agent Skills reference tooling
(``skills-ref to-prompt``) emits it: one element per line, text HTML-escaped, location the
absolute path of SKILL.md. A budget shortens skill descriptions first (down to
``MIN_DESCRIPTION`` characters), then leaves out entries from the end of the listing
(recipes, then skills); whatever was cut is said in the output itself. Resident bodies and
tool contracts are never cut.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from librarian.core.jsonable import to_jsonable
from librarian.errors import UsageError
from librarian.gate.tools import ToolContract
from librarian.prompt.entries import RecipeEntry, Registry, SkillEntry

Format = Literal["xml", "markdown", "json"]
FORMATS: tuple[Format, ...] = ("xml", "markdown", "json")
MIN_DESCRIPTION = 40
ELLIPSIS = "…"


@dataclass(frozen=True, slots=True)
class Cut:
    budget: int
    shortened: int  # how many descriptions were shortened
    description_limit: int | None
    dropped_skills: tuple[str, ...]
    dropped_recipes: tuple[str, ...]
    over_budget: bool  # even with everything cuttable cut, the output exceeds the budget


@dataclass(frozen=True, slots=True)
class PromptView:
    skills: tuple[SkillEntry, ...]
    recipes: tuple[RecipeEntry, ...]
    registry: Registry
    cut: Cut | None = None
    operator: bool = False  # the JSON adds what only a person sees (hidden skills)


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    format: Format
    text: str
    cut: Cut | None
    problems: tuple[str, ...]


def check_format(fmt: str) -> Format:
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}", hint="one of: " + ", ".join(FORMATS))
    return fmt


def render_prompt(registry: Registry, fmt: str = "xml", budget: int | None = None,
                  *, operator: bool = False) -> RenderedPrompt:
    """What an agent reads; ``operator`` adds, in JSON only and under its own
    ``operator`` field, what an agent is never shown (the hidden skills)."""
    fmt_ = check_format(fmt)
    if budget is not None and budget < 1:
        raise UsageError("--budget must be a positive number of characters")
    if operator and fmt_ != "json":
        raise UsageError("--operator is a view for people in JSON",
                         hint="add --format json (or --json)")
    render = RENDERERS[fmt_]
    full = PromptView(registry.skills, registry.recipes, registry, operator=operator)
    text = render(full)
    if budget is None or len(text) <= budget:
        return RenderedPrompt(fmt_, text, None, registry.problems)
    view = _fit(full, render, budget)
    return RenderedPrompt(fmt_, render(view), view.cut, registry.problems)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + ELLIPSIS


def _view(full: PromptView, budget: int, limit: int | None, keep: int) -> PromptView:
    skills = full.skills
    if limit is not None:
        skills = tuple(replace(s, description=_shorten(s.description, limit)) for s in skills)
    # Resident skills are never dropped (their body is in the prompt anyway).
    entries: list[SkillEntry | RecipeEntry] = [
        *(s for s in skills if not s.resident), *full.recipes]
    dropped = entries[keep:]
    gone = {id(e) for e in dropped}
    kept = [e for e in (*skills, *full.recipes) if id(e) not in gone]
    originals = {s.name: s.description for s in full.skills}
    shortened = sum(1 for e in kept if isinstance(e, SkillEntry)
                    and e.description != originals[e.name])
    cut = Cut(
        budget=budget,
        shortened=shortened,
        description_limit=limit if shortened else None,
        dropped_skills=tuple(e.name for e in dropped if isinstance(e, SkillEntry)),
        dropped_recipes=tuple(e.name for e in dropped if isinstance(e, RecipeEntry)),
        over_budget=False,
    )
    return PromptView(
        tuple(e for e in kept if isinstance(e, SkillEntry)),
        tuple(e for e in kept if isinstance(e, RecipeEntry)),
        full.registry,
        cut,
        full.operator,
    )


def _largest(low: int, high: int, ok: Callable[[int], bool]) -> int:
    """The largest value in [low, high] for which ``ok`` holds (``ok`` is monotone and
    holds at ``low``): a binary search, since every probe renders the whole prompt."""
    while low < high:
        middle = (low + high + 1) // 2
        if ok(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _fit(full: PromptView, render: Callable[[PromptView], str], budget: int) -> PromptView:
    total = sum(1 for s in full.skills if not s.resident) + len(full.recipes)

    def fits(view: PromptView) -> bool:
        return len(render(view)) <= budget

    longest = max((len(s.description) for s in full.skills), default=0)
    if longest > MIN_DESCRIPTION and fits(_view(full, budget, MIN_DESCRIPTION, total)):
        # Shorten descriptions first: the longest limit at which every entry still fits.
        limit = _largest(MIN_DESCRIPTION, longest - 1,
                         lambda n: fits(_view(full, budget, n, total)))
        return _view(full, budget, limit, total)
    description_limit = MIN_DESCRIPTION if longest > MIN_DESCRIPTION else None
    if not fits(_view(full, budget, description_limit, 0)):
        view = _view(full, budget, description_limit, 0)
        assert view.cut is not None
        return replace(view, cut=replace(view.cut, over_budget=True))
    # Then drop entries: the most that fit with the shortest descriptions.
    kept = _largest(0, total - 1, lambda n: fits(_view(full, budget, description_limit, n)))
    return _view(full, budget, description_limit, kept)


def cut_note(cut: Cut) -> str:
    parts = []
    if cut.shortened:
        parts.append(f"{_count(cut.shortened, 'skill description')} shortened to at most "
                     f"{cut.description_limit} characters")
    if cut.dropped_skills:
        parts.append(_count(len(cut.dropped_skills), "skill") + " not listed")
    if cut.dropped_recipes:
        parts.append(_count(len(cut.dropped_recipes), "recipe") + " not listed")
    text = f"Budget {cut.budget} characters: " + "; ".join(parts or ["nothing could be cut"])
    if cut.over_budget:
        text += "; still over budget (resident skill bodies and tool contracts are never cut)"
    if cut.dropped_skills or cut.dropped_recipes:
        text += ". Run `librarian inspect` to list every item."
    return text


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


# -- XML ------------------------------------------------------------------------------


def _esc(text: str) -> str:
    return html.escape(text)


def _element(lines: list[str], tag: str, text: str) -> None:
    lines += [f"<{tag}>", _esc(text), f"</{tag}>"]


def render_xml(view: PromptView) -> str:
    lines = ["<available_skills>"]
    for skill in view.skills:
        lines.append("<skill>")
        _element(lines, "name", skill.name)
        _element(lines, "description", skill.description)
        _element(lines, "location", skill.location)
        lines.append("</skill>")
    lines.append("</available_skills>")
    registry = view.registry
    if registry.resident:
        lines += ["", "<resident_skills>"]
        for body in registry.resident:
            lines.append("<skill>")
            _element(lines, "name", body.name)
            _element(lines, "location", body.location)
            lines += ["<instructions>", html.escape(body.body.strip("\n"), quote=False),
                      "</instructions>", "</skill>"]
        lines.append("</resident_skills>")
    if view.recipes:
        lines += ["", "<available_recipes>"]
        for recipe in view.recipes:
            lines.append("<recipe>")
            _element(lines, "name", recipe.name)
            _element(lines, "environment", recipe.environment)
            _element(lines, "execution", recipe.execution)
            lines.append("</recipe>")
        lines.append("</available_recipes>")
    if registry.tools:
        lines += ["", "<exposed_tools>"]
        for tool in registry.tools:
            lines += _tool_xml(tool)
        lines.append("</exposed_tools>")
    if view.cut is not None:
        lines += ["", "<librarian_note>", _esc(cut_note(view.cut)), "</librarian_note>"]
    return "\n".join(lines)


def _attr(value: object) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return html.escape(text, quote=True)


def _tool_xml(tool: ToolContract) -> list[str]:
    lines = ["<tool>"]
    _element(lines, "name", tool.name)
    if tool.description is not None:
        _element(lines, "description", tool.description)
    _element(lines, "recipe", tool.recipe)
    if tool.execution is not None:
        _element(lines, "execution", tool.execution)
    if tool.environment is not None:
        _element(lines, "environment", tool.environment)
    if tool.inputs:
        lines.append("<inputs>")
        for spec in tool.inputs:
            attrs = f'name="{_attr(spec.name)}" type="{_attr(spec.type)}"'
            attrs += f' required="{_attr(spec.required)}"'
            if spec.default is not None:
                attrs += f' default="{_attr(spec.default)}"'
            lines.append(f"<input {attrs}>{_esc(spec.description or '')}</input>")
        lines.append("</inputs>")
    if tool.result:
        _element(lines, "result", tool.result)
    if tool.effects:
        attrs = " ".join(f'{k}="{_attr(v)}"' for k, v in sorted(tool.effects.items()))
        lines.append(f"<effects {attrs}/>")
    if tool.timeout is not None:
        _element(lines, "timeout", str(tool.timeout))
    _element(lines, "status", tool.status)
    if tool.reason:
        _element(lines, "reason", tool.reason)
    lines.append("</tool>")
    return lines


# -- Markdown -------------------------------------------------------------------------


def _flat(text: str) -> str:
    return " ".join(text.split())


def render_markdown(view: PromptView) -> str:
    lines = ["# Available skills", ""]
    for skill in view.skills:
        lines.append(f"- **{skill.name}**: {_flat(skill.description)} (`{skill.location}`)")
    if not view.skills:
        lines.append("(none)")
    registry = view.registry
    for body in registry.resident:
        lines += ["", f"# Resident skill: {body.name}", "", f"Location: `{body.location}`", "",
                  body.body.strip("\n")]
    if view.recipes:
        lines += ["", "# Recipes", ""]
        lines += [f"- **{r.name}**: environment {r.environment}, execution {r.execution}"
                  for r in view.recipes]
    if registry.tools:
        lines += ["", "# Exposed tools"]
        for tool in registry.tools:
            lines += _tool_markdown(tool)
    if view.cut is not None:
        lines += ["", f"> {cut_note(view.cut)}"]
    return "\n".join(lines)


def _tool_markdown(tool: ToolContract) -> list[str]:
    lines = ["", f"## {tool.name}", ""]
    if tool.description:
        lines += [_flat(tool.description), ""]
    lines.append(f"- recipe: {tool.recipe}")
    if tool.execution:
        lines.append(f"- execution: {tool.execution} (environment {tool.environment})")
    if tool.inputs:
        lines.append("- inputs:")
        for spec in tool.inputs:
            flags = [spec.type] + (["required"] if spec.required else [])
            if spec.default is not None:
                flags.append(f"default {json.dumps(spec.default)}")
            text = f": {_flat(spec.description)}" if spec.description else ""
            lines.append(f"  - `{spec.name}` ({', '.join(flags)}){text}")
    if tool.result:
        lines.append(f"- result: {_flat(tool.result)}")
    if tool.effects:
        lines.append("- effects: " + ", ".join(
            f"{k} {json.dumps(v) if not isinstance(v, str) else v}"
            for k, v in sorted(tool.effects.items())))
    if tool.timeout is not None:
        lines.append(f"- timeout: {tool.timeout} s")
    lines.append(f"- status: {tool.status}" + (f" ({tool.reason})" if tool.reason else ""))
    return lines


# -- JSON -----------------------------------------------------------------------------


def prompt_document(view: PromptView) -> dict[str, Any]:
    registry = view.registry
    document: dict[str, Any] = {
        "kind": "prompt",
        "tree": registry.tree,
        "skills": to_jsonable(view.skills),
        "resident": to_jsonable(registry.resident),
        "recipes": to_jsonable(view.recipes),
        "tools": to_jsonable(registry.tools),
        "cut": to_jsonable(view.cut),
        "note": cut_note(view.cut) if view.cut else None,
        "problems": list(registry.problems),
    }
    if view.operator:  # never in what an agent gets (list_skills, skills/list)
        document["operator"] = {"hidden": list(registry.hidden)}
    if registry.layers:  # read over layers: their roots, nearest first
        document["layers"] = list(registry.layers)
    return document


def render_json(view: PromptView) -> str:
    return json.dumps(prompt_document(view), indent=2, ensure_ascii=False)


RENDERERS: dict[Format, Callable[[PromptView], str]] = {
    "xml": render_xml,
    "markdown": render_markdown,
    "json": render_json,
}
