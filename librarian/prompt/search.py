"""``librarian search QUERY`` and the MCP tool ``search_skills``: ranked search over the
name, description and body of every visible skill, those a budget cuts from the listing
included, so an agent can find a skill the prompt had no room for.

SQLite's FTS5 (standard library; ``porter unicode61`` tokens, so ``tests`` finds
``testing``) ranks by bm25, the name weighing most, then the description, then the body.
The index lives in ``.git/librarian/cache/search.sqlite``: one row per visible skill,
keyed by its item tree id and name, so when HEAD moves only the skills whose tree
changed are read and indexed again; the HEAD tree last indexed is remembered, so a
search of an unchanged library reads nothing but the index. A cache directory that
cannot be written (not a library, a link) gets an index in memory instead.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from librarian.core.fsutil import cache_dir_ready
from librarian.core.model import MANIFEST_FILES
from librarian.errors import UsageError
from librarian.formats.config import AgentProfile
from librarian.formats.skillmd import decode_text, split_frontmatter
from librarian.git import GitStore
from librarian.library import Library, committed_items
from librarian.prompt.entries import Registry, SkillEntry
from librarian.prompt.profiles import shown
from librarian.prompt.registry import load_registry

INDEX_FILE = "search.sqlite"
VERSION = "1"
MAX_LIMIT = 50
_WORD = re.compile(r"\w+", re.UNICODE)
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5("
    "name, description, body, key UNINDEXED, tokenize='porter unicode61')",
)


@dataclass(frozen=True, slots=True)
class Hit:
    name: str
    description: str
    location: str
    score: float  # bm25: lower is better


@dataclass(frozen=True, slots=True)
class SearchResult:
    query: str
    hits: tuple[Hit, ...]
    indexed: int  # visible skills in the index


def fts_query(query: str) -> str:
    """The words of ``query`` as an FTS5 expression (any word; quoted, so no operator or
    column filter of FTS5's syntax is ever read from the query)."""
    words = _WORD.findall(query)
    if not words:
        raise UsageError("the search query holds no words", hint="e.g. librarian search pdf")
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words[:64])


class SearchIndex:
    """The index of one library, opened for one or more searches."""

    def __init__(self, library: Library) -> None:
        self.library = library
        path = library.cache_dir / INDEX_FILE
        target = str(path) if cache_dir_ready(path) and not path.is_symlink() else ":memory:"
        self.db = sqlite3.connect(target, timeout=10, check_same_thread=False)
        try:
            for statement in _SCHEMA:
                self.db.execute(statement)
        except sqlite3.DatabaseError:  # a damaged index is only a cache: start over
            self.db.close()
            path.unlink(missing_ok=True)
            self.db = sqlite3.connect(target, timeout=10, check_same_thread=False)
            for statement in _SCHEMA:
                self.db.execute(statement)

    def close(self) -> None:
        self.db.close()

    def _meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT v FROM meta WHERE k = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def sync(self, registry: Registry) -> int:
        """Index exactly the registry's visible skills; returns how many there are."""
        stamp = f"{VERSION} {registry.tree}"
        if self._meta("tree") == stamp:
            return int(self._meta("count") or 0)
        with self.library.store() as store, self.db:
            trees = {item.name: item.tree.decode()
                     for item in committed_items(store, store.tree_of(store.head()))
                     if item.kind == "skill"}
            wanted = {f"{trees.get(s.name, '-')} {s.name}": s for s in registry.skills}
            held = {str(k) for (k,) in self.db.execute("SELECT key FROM docs")}
            gone = held - set(wanted)
            self.db.executemany("DELETE FROM docs WHERE key = ?", [(k,) for k in gone])
            fresh = [(key, skill) for key, skill in wanted.items() if key not in held]
            self.db.executemany(
                "INSERT INTO docs(name, description, body, key) VALUES (?, ?, ?, ?)",
                self._rows(store, fresh))
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('tree', ?)", (stamp,))
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('count', ?)",
                            (str(len(wanted)),))
        return len(wanted)

    def _rows(self, store: GitStore, fresh: list[tuple[str, SkillEntry]]
              ) -> Iterable[tuple[str, str, str, str]]:
        for key, skill in fresh:
            yield (skill.name.replace(":", " ").replace("-", " ") + " " + skill.name,
                   skill.description, self._body(store, key.split(" ", 1)[0]), key)

    @staticmethod
    def _body(store: GitStore, tree: str) -> str:
        with contextlib.suppress(KeyError, ValueError, OSError):
            entry = store.lookup(tree.encode(), MANIFEST_FILES["skill"])
            if entry is not None:
                text = decode_text(store.read_blob(entry.sha), "SKILL.md", [])
                parts = split_frontmatter(text) if text is not None else None
                return parts[1] if parts is not None else (text or "")
        return ""

    def query(self, registry: Registry, query: str, limit: int,
              profile: AgentProfile | None = None) -> SearchResult:
        if isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise UsageError(f"the limit must be a whole number from 1 to {MAX_LIMIT}")
        expression = fts_query(query)
        indexed = self.sync(registry)
        by_name = {s.name: s for s in registry.skills}
        sql = ("SELECT key, bm25(docs, 10.0, 4.0, 1.0, 0.0) AS score FROM docs "
               "WHERE docs MATCH ? ORDER BY score")
        hits: list[Hit] = []
        for key, score in self.db.execute(sql + ("" if profile else f" LIMIT {limit}"),
                                          (expression,)):
            skill = by_name.get(str(key).split(" ", 1)[1])
            if skill is None or (profile is not None and not shown(profile, skill.name)):
                continue
            hits.append(Hit(skill.name, skill.description, skill.location, float(score)))
            if len(hits) == limit:
                break
        return SearchResult(query, tuple(hits), indexed)


def search_skills(library: Library, query: str, limit: int = 10,
                  profile: AgentProfile | None = None, registry: Registry | None = None
                  ) -> SearchResult:
    """The visible skills best matching ``query``, best first."""
    index = SearchIndex(library)
    try:
        return index.query(registry or load_registry(library), query, limit, profile)
    finally:
        index.close()
