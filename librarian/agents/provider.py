"""The committed library as an Agent Skills ``SkillProvider`` (agentskills-core), for the
Python ecosystem of agentskills.io (registries, retrieval, other SEP-2640 servers such as
agentskills-mcp-server) to read a library in place.

Optional: ``agentskills-core`` needs Python 3.12 or newer and is not a dependency of
librarian; only a program that imports this module needs it. Every read comes from the
committed tree (HEAD), as ``librarian mcp`` reads it: skill ids are the names
``load_skill`` takes (``SOURCE:NAME`` for a managed skill; hidden skills are readable by
id, drafts never), ``discover`` lists the visible skills, resources are the files under
``references/``, ``scripts/`` and ``assets/``, and a file's size is read from its object
header and refused over ``max_bytes`` before the file is read.
"""

from __future__ import annotations

from typing import Any

from agentskills_core import (
    RESOURCE_KINDS,
    AgentSkillsError,
    ResourceNotFoundError,
    SkillNotFoundError,
    SkillProvider,
)

from librarian.agents.catalog import frontmatter
from librarian.agents.skills import clean_path
from librarian.core.digest import MODE_EXECUTABLE, MODE_FILE
from librarian.errors import UsageError
from librarian.formats.skillmd import decode_text, split_frontmatter
from librarian.git import GitStore, blob_size
from librarian.library import Item, Library, committed_items
from librarian.prompt.registry import load_registry

DEFAULT_MAX_BYTES = 8 * 1024 * 1024  # librarian's own default bound on one file


class LibrarySkillProvider(SkillProvider):  # type: ignore[misc]
    """Skills of a librarian library as ``agentskills-core`` reads them."""

    supports_resource_listing = True
    supports_discovery = True
    supports_file_access = True

    def __init__(self, library: Library, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.library = library
        self.max_bytes = max_bytes

    # -- lookups (synchronous: small reads of a local repository) ------------------

    def _item(self, store: GitStore, skill_id: str) -> Item:
        for item in committed_items(store, store.tree_of(store.head())):
            if item.kind == "skill" and item.state != "draft" and item.name == skill_id:
                return item
        raise SkillNotFoundError(f"no skill {skill_id!r} in {self.library.root}")

    def _read(self, skill_id: str, path: str) -> bytes:
        try:
            wanted = clean_path(path)
        except UsageError:
            raise ResourceNotFoundError(f"{path!r} is not a file of {skill_id!r}") from None
        with self.library.store() as store:
            item = self._item(store, skill_id)
            entry = store.lookup(item.tree, wanted)
            if entry is None or entry.mode not in (MODE_FILE, MODE_EXECUTABLE):
                raise ResourceNotFoundError(f"{skill_id!r} has no file {path!r}")
            size = blob_size(store, entry.sha)
            if size is not None and size > self.max_bytes:
                raise AgentSkillsError(f"{item.path}/{wanted} is {size} bytes, over the "
                                       f"{self.max_bytes} this provider reads")
            data = store.read_blob(entry.sha)
        if len(data) > self.max_bytes:
            raise AgentSkillsError(f"{item.path}/{wanted} is over {self.max_bytes} bytes")
        return data

    def _files(self, skill_id: str) -> list[str]:
        with self.library.store() as store:
            item = self._item(store, skill_id)
            return sorted(path for path, entry in store.walk(item.tree)
                          if entry.mode in (MODE_FILE, MODE_EXECUTABLE))

    # -- SkillProvider -------------------------------------------------------------

    async def get_metadata(self, skill_id: str) -> dict[str, Any]:
        return frontmatter(self._read(skill_id, "SKILL.md"), skill_id)

    async def get_body(self, skill_id: str) -> str:
        text = decode_text(self._read(skill_id, "SKILL.md"), "SKILL.md", []) or ""
        parts = split_frontmatter(text)
        return parts[1] if parts is not None else text

    async def get_script(self, skill_id: str, name: str) -> bytes:
        return self._read(skill_id, f"scripts/{name}")

    async def get_asset(self, skill_id: str, name: str) -> bytes:
        return self._read(skill_id, f"assets/{name}")

    async def get_reference(self, skill_id: str, name: str) -> bytes:
        return self._read(skill_id, f"references/{name}")

    async def list_resources(self, skill_id: str) -> dict[str, list[str]]:
        files = self._files(skill_id)
        return {kind: sorted(p[len(kind) + 1:] for p in files if p.startswith(f"{kind}/"))
                for kind in RESOURCE_KINDS}

    async def discover(self) -> list[str]:
        return sorted(skill.name for skill in load_registry(self.library).skills)

    async def list_files(self, skill_id: str) -> list[str]:
        return self._files(skill_id)

    async def read_file(self, skill_id: str, path: str) -> bytes:
        return self._read(skill_id, path)
