"""The library's committed configuration files: library.yaml, tools.yaml, librarian.lock.

Each is validated where it enters (``load_*``) and written deterministically (``dump_*``)
so that its diff in ``git log -p`` is reviewable. Rewriting drops YAML comments; the
formats are small enough that this is the honest trade (docs/formats.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from librarian.core.gitpaths import path_problem, visible
from librarian.core.model import (
    BOUND_KEYS,
    CONFORMANCE_LEVELS,
    RUN_LIMIT_KEYS,
    SOURCES_DIR,
    Policy,
)
from librarian.core.names import name_problem
from librarian.errors import UsageError
from librarian.formats.lockfile import DIGEST_RE as DIGEST_RE
from librarian.formats.lockfile import LOCK_FILE as LOCK_FILE
from librarian.formats.lockfile import LockedSource as LockedSource
from librarian.formats.lockfile import digest_problem as digest_problem
from librarian.formats.lockfile import dump_lock as dump_lock
from librarian.formats.lockfile import load_lock as load_lock
from librarian.formats.yamlio import dump_yaml, load_yaml, mapping_of

# librarian.lock has its own module (formats/lockfile.py, a fixed shape read without a
# general YAML parse); its names are re-exported here with the other committed files.

LIBRARY_FILE = "library.yaml"
TOOLS_FILE = "tools.yaml"
#: What ``agents.may`` may grant an agent over MCP, and what it grants when unset.
AGENT_VERBS = ("draft", "promote", "defer", "discard", "expose")
DEFAULT_AGENT_VERBS = ("draft",)
#: ``run: {enforcement: …}``: refuse a run whose declared effects cannot be enforced
#: here (``strict``, the default), or run it and say what was not (``best-effort``).
ENFORCEMENT_MODES = ("strict", "best-effort")
_FINGERPRINT = re.compile(r"sha256:[0-9a-f]{64}")

#: The largest value each policy bound may take (docs/decisions.md): far above any real
#: collection, low enough that no read or allocation overflows.
POLICY_CEILINGS = {"max_exposed_tools": 10_000, "max_item_bytes": 4 << 30,
                   "max_item_files": 1_000_000, "max_file_bytes": 1 << 30,
                   "run_memory_mb": 1 << 20, "run_processes": 1 << 22}
_HELPER_URL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+.-]*::")  # ext::, fd::: git remote helpers


@dataclass(frozen=True, slots=True)
class SourceConfig:
    url: str
    ref: str = "main"
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    trust: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AgentProfile:
    """``agents.profiles.NAME``: what one agent is shown, as patterns over skill names
    (``pdf``, ``team:*``); it only narrows what the library shows."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LibraryConfig:
    name: str
    policy: Policy = field(default_factory=Policy)
    resident: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    sources: Mapping[str, SourceConfig] = field(default_factory=dict)
    agents_may: tuple[str, ...] | None = None  # ``agents: {may: [...]}``; None: not set
    enforcement: str | None = None  # ``run: {enforcement: ...}``; None: not set (strict)
    profiles: Mapping[str, AgentProfile] = field(default_factory=dict)  # agents.profiles

    @property
    def best_effort(self) -> bool:
        """Whether a run whose effects cannot all be enforced here may still run."""
        return self.enforcement == "best-effort"

    @property
    def agent_verbs(self) -> tuple[str, ...]:
        """What an agent may do over MCP (spec §8): ``agents.may``, default ``[draft]``."""
        return DEFAULT_AGENT_VERBS if self.agents_may is None else self.agents_may


def _strings(value: object, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{what} must be a list of strings")
    return tuple(value)


def _unknown(keys: Mapping[str, Any], allowed: set[str], what: str) -> None:
    extra = sorted(set(keys) - allowed)
    if extra:
        raise UsageError(f"{what}: unknown key {extra[0]!r}", hint=f"allowed: {sorted(allowed)}")


def load_library_config(data: bytes, where: str = LIBRARY_FILE) -> LibraryConfig:
    return library_config_of(load_yaml(data, where), where)


def library_config_of(document: object, where: str = LIBRARY_FILE) -> LibraryConfig:
    """Validate a parsed ``library.yaml`` document (``load_yaml``'s result)."""
    doc = mapping_of(document, where)
    _unknown(doc, {"librarian", "name", "policy", "skills", "sources", "agents", "run"}, where)
    if doc.get("librarian") != 1:
        raise UsageError(f"{where}: 'librarian: 1' is required (format version)")
    name = doc.get("name")
    if not isinstance(name, str) or name_problem(name):
        raise UsageError(f"{where}: name must be a valid library name, got {name!r}")
    policy_doc = mapping_of(doc.get("policy"), f"{where}: policy")
    allowed = {f.name for f in fields(Policy)}
    _unknown(policy_doc, allowed, f"{where}: policy")
    _check_policy(policy_doc, where)
    skills = mapping_of(doc.get("skills"), f"{where}: skills")
    _unknown(skills, {"resident", "hidden"}, f"{where}: skills")
    sources: dict[str, SourceConfig] = {}
    for source_name, spec in mapping_of(doc.get("sources"), f"{where}: sources").items():
        what = f"{where}: sources.{source_name}"
        if name_problem(source_name):
            raise UsageError(f"{what}: invalid source name")
        spec = mapping_of(spec, what)
        _unknown(spec, {"url", "ref", "include", "exclude", "trust"}, what)
        url, ref = spec.get("url"), spec.get("ref", "main")
        if not isinstance(url, str) or not url:
            raise UsageError(f"{what}: url is required")
        if _HELPER_URL.match(url):
            raise UsageError(f"{what}: the transport {url.split('::')[0]!r}:: (a git remote "
                             "helper) is not one librarian speaks",
                             hint="use https://, ssh, git://, file:// or a local path")
        if not isinstance(ref, str) or not ref:
            raise UsageError(f"{what}: ref must be a string")
        sources[source_name] = SourceConfig(
            url=url,
            ref=ref,
            include=_strings(spec.get("include"), f"{what}.include"),
            exclude=_strings(spec.get("exclude"), f"{what}.exclude"),
            trust=_strings(spec.get("trust"), f"{what}.trust"),
        )
    agents = mapping_of(doc.get("agents"), f"{where}: agents")
    _unknown(agents, {"may", "profiles"}, f"{where}: agents")
    may = _strings(agents.get("may"), f"{where}: agents.may") if "may" in agents else None
    profiles = {}
    for profile, spec_doc in mapping_of(agents.get("profiles"),
                                        f"{where}: agents.profiles").items():
        what = f"{where}: agents.profiles.{profile}"
        if name_problem(profile):
            raise UsageError(f"{what}: not a valid profile name",
                             hint="1-64 of a-z, 0-9 and -")
        spec = mapping_of(spec_doc, what)
        _unknown(spec, {"include", "exclude"}, what)
        profiles[profile] = AgentProfile(_strings(spec.get("include"), f"{what}.include"),
                                         _strings(spec.get("exclude"), f"{what}.exclude"))
    for verb in may or ():
        if verb not in AGENT_VERBS:
            raise UsageError(f"{where}: agents.may: unknown verb {verb!r}",
                             hint="one of: " + ", ".join(AGENT_VERBS))
    run = mapping_of(doc.get("run"), f"{where}: run")
    _unknown(run, {"enforcement"}, f"{where}: run")
    enforcement = run.get("enforcement")
    if enforcement is not None and enforcement not in ENFORCEMENT_MODES:
        raise UsageError(f"{where}: run.enforcement must be one of "
                         f"{', '.join(ENFORCEMENT_MODES)}, got {enforcement!r}",
                         hint="strict (the default) refuses what cannot be enforced")
    return LibraryConfig(
        agents_may=may,
        enforcement=enforcement,
        profiles=profiles,
        name=name,
        policy=_policy(policy_doc),
        resident=_strings(skills.get("resident"), f"{where}: skills.resident"),
        hidden=_strings(skills.get("hidden"), f"{where}: skills.hidden"),
        sources=sources,
    )


def _check_policy(policy: Mapping[str, Any], where: str) -> None:
    for key, value in policy.items():
        if key == "conformance":
            if value not in CONFORMANCE_LEVELS:
                raise UsageError(f"{where}: policy.conformance must be one of "
                                 f"{', '.join(CONFORMANCE_LEVELS)}, got {value!r}")
        elif key == "allowed_secrets":
            if not isinstance(value, list) or not all(
                    isinstance(v, str) and _FINGERPRINT.fullmatch(v) for v in value):
                raise UsageError(f"{where}: policy.allowed_secrets must be a list of "
                                 "sha256:<64 hex> fingerprints",
                                 hint="copy them from the refusal that printed them")
        elif isinstance(value, bool) or not isinstance(value, int) or not (
                1 <= value <= POLICY_CEILINGS[key]):
            raise UsageError(f"{where}: policy.{key} must be a whole number from 1 to "
                             f"{POLICY_CEILINGS[key]}", hint=f"the default is "
                             f"{getattr(Policy(), key)}")


def _policy(doc: Mapping[str, Any]) -> Policy:
    values: dict[str, Any] = dict(doc)
    if "allowed_secrets" in values:
        values["allowed_secrets"] = tuple(values["allowed_secrets"])
    return Policy(**values)


def dump_library_config(config: LibraryConfig) -> bytes:
    sources: dict[str, Any] = {}
    for source_name, source in sorted(config.sources.items()):
        spec: dict[str, Any] = {"url": source.url, "ref": source.ref}
        spec["include"] = list(source.include)
        spec["exclude"] = list(source.exclude)
        if source.trust:
            spec["trust"] = list(source.trust)
        sources[source_name] = spec
    policy: dict[str, Any] = {key: getattr(config.policy, key) for key in BOUND_KEYS}
    if config.policy.conformance != Policy().conformance:  # written only when set
        policy["conformance"] = config.policy.conformance
    if config.policy.allowed_secrets:
        policy["allowed_secrets"] = list(config.policy.allowed_secrets)
    for key in RUN_LIMIT_KEYS:  # written only when set
        if getattr(config.policy, key) != getattr(Policy(), key):
            policy[key] = getattr(config.policy, key)
    extra: dict[str, Any] = {}  # sections written only when set
    agents_doc: dict[str, Any] = {}
    if config.agents_may is not None:
        agents_doc["may"] = list(config.agents_may)
    if config.profiles:
        agents_doc["profiles"] = {
            name: {"include": list(p.include), "exclude": list(p.exclude)}
            for name, p in sorted(config.profiles.items())}
    if agents_doc:
        extra["agents"] = agents_doc
    if config.enforcement is not None:
        extra["run"] = {"enforcement": config.enforcement}
    return dump_yaml(
        {
            "librarian": 1,
            "name": config.name,
            "policy": policy,
            "skills": {"resident": list(config.resident), "hidden": list(config.hidden)},
            "sources": sources,
            **extra,
        }
    )


@dataclass(frozen=True, slots=True)
class ToolEntry:
    recipe: str  # library path of the recipe: recipes/<name> or sources/<s>/…
    digest: str


def load_tools(data: bytes, where: str = TOOLS_FILE) -> dict[str, ToolEntry]:
    return tools_of(load_yaml(data, where), where)


def tools_of(document: object, where: str = TOOLS_FILE) -> dict[str, ToolEntry]:
    """Validate a parsed ``tools.yaml`` document (``load_yaml``'s result)."""
    doc = mapping_of(document, where)
    _unknown(doc, {"tools"}, where)
    tools: dict[str, ToolEntry] = {}
    for tool_name, spec in mapping_of(doc.get("tools"), f"{where}: tools").items():
        what = f"{where}: tools.{tool_name}"
        spec = mapping_of(spec, what)
        _unknown(spec, {"recipe", "digest"}, what)
        recipe, digest = spec.get("recipe"), spec.get("digest")
        if not isinstance(recipe, str) or not isinstance(digest, str):
            raise UsageError(f"{what}: recipe and digest are required strings")
        problem = name_problem(tool_name)
        if problem is not None:
            raise UsageError(f"{where}: the tool name {visible(tool_name)!r} {problem}")
        parts = recipe.split("/")
        in_place = (len(parts) == 2 and parts[0] == "recipes" and not name_problem(parts[1])) or (
            len(parts) >= 3 and parts[0] == SOURCES_DIR and not name_problem(parts[1]))
        if path_problem(recipe) is not None or not in_place:
            raise UsageError(f"{what}: recipe {visible(recipe)!r} is not recipes/<name> or "
                             "sources/<source>/<path>")
        if not DIGEST_RE.fullmatch(digest):  # a pin matching no content is merely stale
            raise UsageError(f"{what}: digest {digest!r} is not sha256: and 64 hex digits")
        tools[tool_name] = ToolEntry(recipe, digest)
    return tools


def dump_tools(tools: Mapping[str, ToolEntry]) -> bytes:
    return dump_yaml(
        {"tools": {k: {"recipe": v.recipe, "digest": v.digest} for k, v in sorted(tools.items())}}
    )
