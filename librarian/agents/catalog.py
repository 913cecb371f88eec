"""The MCP skills extension's catalog of a library: ``skills/list``, ``skills/get``,
``resources/directory/read`` and the files they name, as plain values (no SDK here).

URIs: a retained skill is ``skill://library/NAME/SKILL.md``, a managed one
``skill://sources/SOURCE/NAME/SKILL.md``. The authority (``library`` or ``sources``) is a
fixed word, so every URL parser reads them (no ``:`` where a port would be), the skill's
name is the last segment before ``SKILL.md`` (as hosts check), and a managed skill can
never take a retained skill's URI whatever the names. Segments are percent-encoded.

An entry is the frontmatter as YAML 1.2's core schema reads it (``formats.yaml12``) and
every file of the item's committed tree with ``sha256:`` of its raw bytes and its size.
Digests are remembered by blob id (``cache/skill-digests.json``): an unchanged file is
never hashed again. A blob's size is read from its header before the blob is read, so a
skill over ``MAX_FILES`` files or ``MAX_BYTES`` bytes is refused without reading it. The
item's git tree id is under ``_meta["librarian/tree"]``. Every page of a listing comes
from one commit: the cursor names it.
"""

from __future__ import annotations

import hashlib
import mimetypes
import re
import stat
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from librarian.cache import TreeMemo
from librarian.core.digest import MODE_EXECUTABLE, MODE_FILE
from librarian.core.model import SOURCES_DIR
from librarian.errors import UsageError
from librarian.formats.skillmd import decode_text, split_frontmatter
from librarian.formats.yaml12 import load_core
from librarian.git import GitStore, blob_size
from librarian.library import Item, Library, Snapshot, committed_items
from librarian.prompt.build import build_registry
from librarian.prompt.entries import Registry
from librarian.prompt.registry import load_registry

EXTENSION = "io.modelcontextprotocol/skills"
META_TREE = "librarian/tree"
META_NAME = "librarian/name"
DIRECTORY_MIME = "inode/directory"
MAX_FILES = 512
MAX_BYTES = 16 * 1024 * 1024
PAGE = 50
TTL_MS = 60_000  # a change is also announced (list_changed) when HEAD moves
CACHE_SCOPE = "private"
_NAME = re.compile(r"^[0-9a-z]+(?:-[0-9a-z]+)*$")
_SAFE = "!$&'()*+,:;=@|"


class UnknownResource(UsageError):
    """A URI this library does not serve (answered as -32602 invalid params)."""


class TooLarge(UsageError):
    """A skill over the extension's limits (not served; ``check`` reports it)."""


def _segment(text: str) -> str:
    return quote(text, safe=_SAFE)


def root_uri(item: Item) -> str | None:
    """``skill://library/NAME`` or ``skill://sources/SOURCE/NAME``; None for a draft or a
    recipe (never served)."""
    if item.kind != "skill" or item.state == "draft":
        return None
    if item.state == "managed":
        source = item.path.split("/")[1] if item.path.startswith(f"{SOURCES_DIR}/") else ""
        return f"skill://sources/{_segment(source)}/{_segment(item.bare_name)}"
    return f"skill://library/{_segment(item.bare_name)}"


def named_uri(name: str, state: str) -> str:
    """The SKILL.md URI of a listed skill by its registry name (``SOURCE:NAME`` when
    managed) and state."""
    if state == "managed" and ":" in name:
        source, bare = name.split(":", 1)
        return f"skill://sources/{_segment(source)}/{_segment(bare)}/SKILL.md"
    return f"skill://library/{_segment(name)}/SKILL.md"


def skill_md_uri(item: Item) -> str | None:
    root = root_uri(item)
    return None if root is None else f"{root}/SKILL.md"


def parse_uri(uri: str) -> tuple[str, list[str]]:
    """(the skill's root URI, the path segments below it) of a served URI."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        raise UnknownResource(f"{uri!r} is not a valid URI") from None
    if parts.scheme != "skill" or parts.query or parts.fragment or \
            parts.netloc not in ("library", "sources"):
        raise UnknownResource(f"{uri!r} is not a skill of this library",
                              hint="skill://library/NAME/SKILL.md or "
                                   "skill://sources/SOURCE/NAME/SKILL.md")
    segments = [unquote(s) for s in parts.path.split("/")[1:]]
    if segments and segments[-1] == "":
        segments.pop()  # a directory written with its trailing slash
    if any(s in ("", ".", "..") or "/" in s or "\x00" in s for s in segments):
        raise UnknownResource(f"{uri!r} is not a path inside a skill")
    depth = 1 if parts.netloc == "library" else 2
    if len(segments) < depth:
        raise UnknownResource(f"{uri!r} names no skill")
    root = "skill://" + parts.netloc + "".join("/" + _segment(s) for s in segments[:depth])
    return root, segments[depth:]


def entry_problems(entry: dict[str, Any]) -> list[str]:
    """Why a host would refuse this entry (the extension's and Agent Skills' rules)."""
    problems = []
    front = entry["frontmatter"]
    name, description = front.get("name"), front.get("description")
    last = unquote(entry["uri"].rsplit("/", 2)[-2])
    if not isinstance(name, str) or len(name) > 64 or not _NAME.match(name):
        problems.append(f"frontmatter name {name!r} is not 1-64 lowercase letters, digits "
                        "and single hyphens")
    elif name != last:
        problems.append(f"frontmatter name {name!r} differs from its folder {last!r}")
    if not isinstance(description, str) or not description or len(description) > 1024:
        problems.append("frontmatter description is not a string of 1-1024 characters")
    compatibility = front.get("compatibility")
    if compatibility is not None and (not isinstance(compatibility, str) or not compatibility
                                      or len(compatibility) > 500):
        problems.append("frontmatter compatibility is not a string of 1-500 characters")
    metadata = front.get("metadata")
    if metadata is not None and not (isinstance(metadata, dict) and all(
            isinstance(v, str) for v in metadata.values())):
        problems.append("frontmatter metadata does not map strings to strings")
    return problems


class Catalog:
    """The skills of one library, read from one commit per call."""

    def __init__(self, library: Library,
                 narrow: Callable[[Registry], Registry] | None = None) -> None:
        self.library = library
        self.narrow = narrow  # an agent profile's view of the visible skills
        self._entries: dict[tuple[bytes, str], dict[str, Any]] = {}

    # -- entries -------------------------------------------------------------------

    def files(self, store: GitStore, item: Item) -> list[tuple[str, bytes, int]]:
        """(path, blob id, size) of every file, sizes from the object headers, within
        the limits (``TooLarge`` otherwise) and without reading a blob."""
        found: list[tuple[str, bytes, int]] = []
        total = 0
        memo = TreeMemo.of(store, "skill-digests")
        for path, entry in store.walk(item.tree):
            if entry.mode not in (MODE_FILE, MODE_EXECUTABLE):
                continue  # items hold regular files only; anything else is never served
            if len(found) >= MAX_FILES:
                raise TooLarge(f"{item.path} holds more than {MAX_FILES} files (the skills "
                               "extension's limit): not served over skills/list")
            known = memo.get(entry.sha.decode())
            size = int(known.split()[1]) if isinstance(known, str) else \
                blob_size(store, entry.sha)
            if size is None:
                size = len(store.read_blob(entry.sha))
            total += size
            if total > MAX_BYTES:
                raise TooLarge(f"{item.path} holds more than {MAX_BYTES} bytes (the skills "
                               "extension's limit): not served over skills/list")
            found.append((path, entry.sha, size))
        return found

    def digest(self, store: GitStore, blob: bytes) -> tuple[str, int]:
        """``sha256:<hex>`` of the raw bytes and their size, remembered by blob id."""
        memo = TreeMemo.of(store, "skill-digests")
        known = memo.get(blob.decode())
        if isinstance(known, str) and known.startswith("sha256:") and " " in known:
            digest, size = known.split()
            return digest, int(size)
        data = store.read_blob(blob)
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        memo.put(blob.decode(), f"{digest} {len(data)}")
        return digest, len(data)

    def entry(self, store: GitStore, item: Item) -> dict[str, Any]:
        """The extension's entry of one committed skill (``TooLarge`` over the limits)."""
        uri = skill_md_uri(item)
        if uri is None:
            raise UnknownResource(f"{item.path} is not a served skill")
        key = (item.tree, uri)
        if key in self._entries:
            return self._entries[key]
        files = self.files(store, item)
        resources = []
        root = uri[: -len("/SKILL.md")]
        manifest = None
        for path, blob, _ in files:
            digest, size = self.digest(store, blob)
            resources.append({"uri": root + "".join("/" + _segment(p) for p in path.split("/")),
                              "digest": digest, "size": size})
            if path == "SKILL.md":
                manifest = blob
        if manifest is None:
            raise UnknownResource(f"{item.path} holds no SKILL.md")
        entry = {"uri": uri, "frontmatter": frontmatter(store.read_blob(manifest), item.path),
                 "resources": resources,
                 "_meta": {META_TREE: item.tree.decode(), META_NAME: item.name}}
        self._entries[key] = entry
        return entry

    # -- the three requests --------------------------------------------------------

    def list_page(self, cursor: str | None) -> dict[str, Any]:
        """One page of the visible skills (as the profile shows them), all from the
        commit the cursor names."""
        with self.library.store() as store:
            head, offset = self._cursor(store, cursor)
            registry = self._registry(store, head)
            if self.narrow is not None:
                registry = self.narrow(registry)
            items = {i.name: i for i in committed_items(store, store.tree_of(head))}
            served = []
            for skill in registry.skills:
                item = items.get(skill.name)
                if item is None:
                    continue
                try:
                    entry = self.entry(store, item)
                except UsageError:
                    continue  # too large or unreadable: check reports it
                if not entry_problems(entry):
                    served.append(entry)
                if len(served) > offset + PAGE:
                    break  # one more than the page: there is a next page
            TreeMemo.save_all(store)
        page = served[offset: offset + PAGE]
        result: dict[str, Any] = {"skills": page, "ttlMs": TTL_MS, "cacheScope": CACHE_SCOPE}
        if offset + PAGE < len(served):
            result["nextCursor"] = f"{(head or b'-').decode()}.{offset + PAGE}"
        return result

    def get(self, uri: str) -> dict[str, Any]:
        """The entry of any committed skill (hidden ones too; never a draft)."""
        with self.library.store() as store:
            item = self.find(store, uri, exact=True)
            try:
                entry = self.entry(store, item)
            finally:
                TreeMemo.save_all(store)
        return {"skill": entry, "ttlMs": TTL_MS, "cacheScope": CACHE_SCOPE}

    def directory(self, uri: str) -> dict[str, Any]:
        """The direct children of a skill's folder (subfolders as ``inode/directory``)."""
        with self.library.store() as store:
            item = self.find(store, uri)
            _, below = parse_uri(uri)
            tree: bytes | None = item.tree
            if below:
                found = store.lookup(item.tree, "/".join(below))
                tree = found.sha if found is not None and stat.S_ISDIR(found.mode) else None
            if tree is None:
                raise UnknownResource(f"{uri!r} is not a folder of the skill")
            base = uri.rstrip("/")
            children = []
            for name, entry in store.tree_items(tree).items():
                child = f"{base}/{_segment(name)}"
                if stat.S_ISDIR(entry.mode):
                    children.append({"uri": child, "name": name, "mimeType": DIRECTORY_MIME})
                elif entry.mode in (MODE_FILE, MODE_EXECUTABLE):
                    children.append({"uri": child, "name": name, "mimeType": mime_of(name)})
        return {"resources": children, "ttlMs": TTL_MS, "cacheScope": CACHE_SCOPE}

    def read(self, uri: str, limit: int = MAX_BYTES) -> tuple[str, bytes]:
        """(path in the item, bytes) of one committed file; its size is checked from the
        object header before the blob is read."""
        with self.library.store() as store:
            item = self.find(store, uri)
            _, below = parse_uri(uri)
            path = "/".join(below)
            found = store.lookup(item.tree, path) if path else None
            if found is None or found.mode not in (MODE_FILE, MODE_EXECUTABLE):
                raise UnknownResource(f"{uri!r} is not a file of the skill")
            size = blob_size(store, found.sha)
            if size is not None and size > limit:
                raise UsageError(f"{item.path}/{path} is {size} bytes, over the {limit} a "
                                 "read serves")
            return path, store.read_blob(found.sha)

    # -- lookups -------------------------------------------------------------------

    def find(self, store: GitStore, uri: str, *, exact: bool = False) -> Item:
        root, below = parse_uri(uri)
        if exact and below != ["SKILL.md"]:
            raise UnknownResource(f"{uri!r} is not the URI of a SKILL.md")
        for item in committed_items(store, store.tree_of(store.head())):
            if root_uri(item) == root:
                return item
        raise UnknownResource(f"no skill at {uri!r} in this library")

    def _cursor(self, store: GitStore, cursor: str | None) -> tuple[bytes | None, int]:
        if cursor is None:
            return store.head(), 0
        head, _, offset = cursor.rpartition(".")
        try:
            if head == "-" or not offset.isdigit() or store.commit(head.encode()) is None:
                raise ValueError(cursor)
        except (KeyError, ValueError, TypeError, AssertionError):
            raise UnknownResource(f"{cursor!r} is not a cursor this server gave") from None
        return head.encode(), int(offset)

    def _registry(self, store: GitStore, head: bytes | None) -> Registry:
        if head == store.head():
            return load_registry(self.library)
        return build_registry(Snapshot.at(self.library, store, head))


def frontmatter(data: bytes, where: str) -> dict[str, Any]:
    """SKILL.md's frontmatter as YAML 1.2's core schema reads it (an empty mapping when
    it has none or is not a mapping: such a skill is invalid and never listed)."""
    problems: list[str] = []
    text = decode_text(data, "SKILL.md", problems)
    parts = split_frontmatter(text) if text is not None else None
    if parts is None:
        return {}
    try:
        document = load_core(parts[0], f"{where}/SKILL.md frontmatter")
    except UsageError:
        return {}
    return {str(k): v for k, v in document.items()} if isinstance(document, dict) else {}


def mime_of(name: str) -> str:
    if name.endswith(".md"):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(name)
    return guessed or "application/octet-stream"

