"""Per-agent views: ``library.yaml`` ``agents: {profiles: {NAME: {include, exclude}}}``.

A profile narrows the registry an agent is shown (``prompt --profile``, ``librarian mcp
--profile``, ``search --profile``, ``export codex-config --profile``); it never widens
it: hidden skills and drafts stay out whatever the patterns say. Patterns are shell
globs (``fnmatch``, case-sensitive): one holding ``:`` is matched against a managed
skill's ``SOURCE:NAME`` (``team:*`` is a whole source), one without against the skill's
bare name (``pdf`` is the retained ``pdf`` and every source's ``pdf``). No ``include``
means every visible skill; ``exclude`` then takes some away. Resident skills follow
their listing: a resident skill outside the profile is neither listed nor resident.
"""

from __future__ import annotations

from dataclasses import replace
from fnmatch import fnmatchcase

from librarian.errors import UsageError
from librarian.formats.config import LIBRARY_FILE, AgentProfile
from librarian.library import Library, Snapshot
from librarian.prompt.entries import Registry
from librarian.prompt.registry import load_registry


def _matches(name: str, pattern: str) -> bool:
    if ":" in pattern:
        return ":" in name and fnmatchcase(name, pattern)
    return fnmatchcase(name.split(":", 1)[-1], pattern)


def shown(profile: AgentProfile, name: str) -> bool:
    """Whether a visible skill named ``name`` (``SOURCE:NAME`` when managed) is shown."""
    if profile.include and not any(_matches(name, p) for p in profile.include):
        return False
    return not any(_matches(name, p) for p in profile.exclude)


def committed_profile(library: Library, name: str) -> AgentProfile:
    """The profile ``name`` of the committed library.yaml (a usage error naming the
    profiles there are when it has none of that name)."""
    with library.store() as store:
        snapshot = Snapshot.head(library, store)
        profiles = snapshot.config.profiles if snapshot.lookup(LIBRARY_FILE) else {}
    if name not in profiles:
        known = ", ".join(sorted(profiles)) or "none"
        raise UsageError(f"library.yaml has no agent profile {name!r} (profiles: {known})",
                         hint="add it under `agents: {profiles: {NAME: {include: [...], "
                              "exclude: [...]}}}` in library.yaml and commit it")
    return profiles[name]


def narrow(registry: Registry, profile: AgentProfile | None) -> Registry:
    """The registry as the profile shows it (unchanged without a profile)."""
    if profile is None:
        return registry
    skills = tuple(s for s in registry.skills if shown(profile, s.name))
    names = {s.name for s in skills}
    return replace(registry, skills=skills,
                   resident=tuple(r for r in registry.resident if r.name in names))


def profiled_registry(library: Library, registry: Registry, profile: str | None
                      ) -> Registry:
    """``registry`` narrowed by the committed profile ``profile`` (None: as it is)."""
    return registry if profile is None else narrow(registry, committed_profile(library,
                                                                               profile))


def agent_registry(library: Library, profile: str | None = None) -> Registry:
    """The committed registry as the agent of ``profile`` sees it."""
    return profiled_registry(library, load_registry(library), profile)
