"""Skills for an agent: the listing ``prompt`` gives (same set, order, budget and cuts),
one skill's committed body and file list, and one of its files (progressive disclosure).

Everything is read from the committed tree (HEAD), never from the work tree, so a path
can only ever name a blob inside the item's own tree: nothing outside the item, no
symlink, no local edit is reachable. Drafts and hidden skills load by name but are
never listed.
"""

from __future__ import annotations

import base64
import json
import stat
from dataclasses import dataclass
from typing import Any

from librarian.agents.catalog import named_uri
from librarian.core.digest import MODE_EXECUTABLE, MODE_FILE
from librarian.core.model import MANIFEST_FILES
from librarian.errors import UsageError
from librarian.git import GitStore, blob_size
from librarian.library import Item, Library, committed_items
from librarian.prompt.entries import Registry
from librarian.prompt.profiles import committed_profile
from librarian.prompt.registry import load_registry
from librarian.prompt.render import render_prompt
from librarian.prompt.search import SearchResult, search_skills

SCHEME = "skill://"
MAX_FILE_BYTES = 8 * 1024 * 1024  # the default per-file bound: nothing larger is committed


def list_skills(library: Library, budget: int | None = None,
                registry: Registry | None = None) -> dict[str, Any]:
    """``prompt --format json [--budget N]`` as a document: the visible skills (name,
    description, location), resident bodies, recipes, tools, what a budget cut."""
    rendered = render_prompt(registry or load_registry(library), "json", budget)
    document: dict[str, Any] = json.loads(rendered.text)
    return document


def find_skill(store: GitStore, name: str) -> Item:
    """A committed skill by name: retained, managed (``SOURCE:NAME``), hidden or a draft."""
    tree = store.tree_of(store.head())
    for item in committed_items(store, tree):
        if item.name == name and item.kind == "skill":
            return item
    raise UsageError(f"no skill named {name!r} in this library",
                     hint="list_skills lists the visible skills; managed ones are SOURCE:NAME")


def load_skill(library: Library, name: str) -> dict[str, Any]:
    """The committed SKILL.md of ``name`` and the list of the skill's files."""
    with library.store() as store:
        item = find_skill(store, name)
        entry = store.lookup(item.tree, MANIFEST_FILES["skill"])
        if entry is None:
            raise UsageError(f"{item.path} holds no SKILL.md")
        body = store.read_blob(entry.sha).decode("utf-8", "replace")
        files = [path for path, _ in store.walk(item.tree)]
    return {"name": item.name, "path": item.path, "state": item.state,
            "location": str(library.path_of(item.path) / MANIFEST_FILES["skill"]),
            "uri": named_uri(item.name, item.state),
            "body": body, "files": files}


def clean_path(path: str) -> str:
    """A relative posix path inside an item, or a usage error: no absolute path, no
    ``..``, no empty or ``.`` segment, no backslash."""
    parts = path.split("/")
    if (not path or path.startswith("/") or "\\" in path or "\x00" in path
            or any(part in ("", ".", "..") for part in parts)):
        raise UsageError(f"{path!r} is not a path inside the skill",
                         hint="use a relative path from the skill's file list, e.g. SKILL.md")
    return path


@dataclass(frozen=True, slots=True)
class SkillFile:
    name: str
    path: str
    data: bytes

    @property
    def text(self) -> str | None:
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def to_json(self) -> dict[str, Any]:
        text = self.text
        if text is not None:
            return {"name": self.name, "path": self.path, "encoding": "utf-8", "text": text}
        return {"name": self.name, "path": self.path, "encoding": "base64",
                "data": base64.b64encode(self.data).decode()}


def read_skill_file(library: Library, name: str, path: str) -> SkillFile:
    """One committed file of the skill ``name``; the path is confined to the item's tree."""
    wanted = clean_path(path)
    with library.store() as store:
        item = find_skill(store, name)
        entry = store.lookup(item.tree, wanted)
        if entry is None or stat.S_ISDIR(entry.mode):
            raise UsageError(f"{item.path} has no file {wanted!r}",
                             hint="load_skill lists the skill's files")
        if entry.mode not in (MODE_FILE, MODE_EXECUTABLE):
            raise UsageError(f"{item.path}/{wanted} is not a regular file")
        size = blob_size(store, entry.sha)  # from the object's header: nothing read yet
        if size is not None and size > MAX_FILE_BYTES:
            raise UsageError(f"{item.path}/{wanted} is larger than {MAX_FILE_BYTES} bytes")
        data = store.read_blob(entry.sha)
    if len(data) > MAX_FILE_BYTES:
        raise UsageError(f"{item.path}/{wanted} is larger than {MAX_FILE_BYTES} bytes")
    return SkillFile(item.name, wanted, data)


def skill_uri(name: str, path: str) -> str:
    return f"{SCHEME}{name}/{path}"


def resource_uri(name: str, state: str) -> str:
    """The URI of a listed skill's SKILL.md (the skills extension's own)."""
    return named_uri(name, state)


def parse_skill_uri(uri: str) -> tuple[str, str]:
    """``skill://NAME/PATH`` -> (NAME, PATH); NAME may be ``SOURCE:NAME``."""
    if not uri.startswith(SCHEME):
        raise UsageError(f"{uri!r} is not a skill:// resource")
    name, sep, path = uri[len(SCHEME):].partition("/")
    if not name or not sep:
        raise UsageError(f"{uri!r} names no file", hint="skill://NAME/SKILL.md")
    return name, path


def instructions_without_registry(library: Library, problem: str) -> str:
    """The instructions when the committed library cannot be listed (a bad library.yaml):
    how to use the server and what is wrong."""
    return _usage(library) + f"\nThe library cannot be listed now: {problem}\n"


def instructions(library: Library, registry: Registry | None = None) -> str:
    """The server's instructions: how to use it, then the bodies of resident skills."""
    registry = registry or load_registry(library)
    lines = [_usage(library)]
    for skill in registry.resident:
        lines += ["", f"## Resident skill: {skill.name}", "", skill.body.strip()]
    return "\n".join(lines) + "\n"


def _usage(library: Library) -> str:
    return (
        f"This server is the librarian library at {library.root}: the agent's skills and "
        "tools, kept in git. Call list_skills to see the skills (name, description); "
        "load_skill(name) returns a skill's SKILL.md and its files, read_skill_file(name, "
        "path) one file. Exposed tools run through librarian's execution gate: a refusal "
        "says why, and only a person approves a recipe (`librarian approve`).")


def search(library: Library, query: str, limit: int = 10, profile: str | None = None,
           registry: Registry | None = None) -> SearchResult:
    """``librarian search`` / ``search_skills``: the visible skills (of ``profile``, when
    given) best matching ``query``."""
    narrowing = committed_profile(library, profile) if profile is not None else None
    return search_skills(library, query, limit, narrowing, registry)
