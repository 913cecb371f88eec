"""git fsck's object rules for what a fetch received, so a hostile pack is refused whole.

A port of the checks ``git fsck --strict`` makes on each object (``fsck.c``: ``fsck_tree``
and the ``.gitmodules`` and ``.gitattributes`` blob checks of ``fsck_blob`` here; the commit
and tag header rules in ``git.fsckheaders``), as git 2.39 reports them: errors,
and warnings (``--strict`` makes them errors). Git's ``info`` messages (``badFilemode``,
a symlinked ``.gitignore``, ``gitmodulesParse``, ``badTagName``…) are not failures and are
not reported here; what librarian itself does not admit (symlinks, case collisions,
Windows names) is an item rule (``sources.upstream``), not a refusal of the whole source.

``Judge`` is fed each object of the quarantined pack once (raw bytes, so a tree's
duplicate or unsorted entries are seen as git sees them), remembers only the subtrees of
new trees, and at the end names the first offending path under the fetched commits.

Pure over bytes (a ``.gitmodules`` is read with dulwich's config parser); imports only
``core.gitpaths`` and ``git.fsckheaders``.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from dulwich.config import ConfigFile
from dulwich.errors import ObjectFormatException

from librarian.core.gitpaths import is_dotgit_name, is_hfs_dot, is_ntfs_dot_generic, visible
from librarian.git.fsckheaders import commit_problem, tag_problem
from librarian.git.rawtree import MODE_WIDTHS
from librarian.git.rawtree import entries as parsed_entries

TREE, COMMIT, TAG, BLOB = 2, 1, 4, 3
_TYPE_NAMES = {COMMIT: "commit", TREE: "tree", BLOB: "blob", TAG: "tag"}
_TYPE_NUMS = {name.encode(): num for num, name in _TYPE_NAMES.items()}
_NULL_SHA = b"\0" * 20
_DIR, _LINK, _GITLINK = 0o040000, 0o120000, 0o160000
ATTR_MAX_LINE_LENGTH = 2048  # attr.h
ATTR_MAX_FILE_SIZE = 100 * 1024 * 1024
#: A name no spelling rule can match: every .git / .gitmodules / .gitattributes spelling
#: starts with "." (HFS+ ignorables are not ASCII) or holds "~" (8.3 names) or "\\".
_ORDINARY_NAME = rb"[\x21-\x2d\x30-\x5b\x5d-\x7d][\x20-\x2e\x30-\x5b\x5d-\x7d]*"
_ORDINARY = re.compile(_ORDINARY_NAME)
#: Names of a tree, joined by newlines (no ordinary name holds one), all ordinary.
_ORDINARY_NAMES = re.compile(rb"%s(?:\n%s)*" % (_ORDINARY_NAME, _ORDINARY_NAME))
#: Names judged per pass (the regex engine keeps state for every repetition).
_NAMES_CHUNK = 256
_NULL_HEX = b"0" * 40

#: Reasons shown for each tree rule (the fsck message id is shown beside it).
_PATH_RULES = frozenset({"fullPathname", "emptyName", "hasDot", "hasDotdot", "hasDotgit"})
_REASONS = {
    "zeroPaddedFilemode": "an entry with a zero-padded file mode",
    "nullSha1": "an entry naming the null object id",
    "duplicateEntries": "a name twice in one tree",
    "treeNotSorted": "a tree whose entries are not in git's order",
    "badTree": "a tree that cannot be parsed",
    "gitmodulesSymlink": ".gitmodules as a symbolic link",
    "gitmodulesBlob": ".gitmodules that is not a file",
    "gitmodulesName": "a .gitmodules naming a submodule with '..' or no name",
    "gitmodulesUrl": "a .gitmodules with a submodule URL git refuses",
    "gitmodulesPath": "a .gitmodules with a submodule path starting with '-'",
    "gitmodulesUpdate": "a .gitmodules with an `update = !command`",
    "gitattributesBlob": ".gitattributes that is not a file",
    "gitattributesLarge": "a .gitattributes over 100 MiB",
    "gitattributesLineLength": "a .gitattributes with a line of 2048 bytes or more",
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One object git refuses: ``check`` is fsck's message id (``hasDotgit``…)."""

    check: str
    kind: str  # tree, commit, tag
    sha: str  # the offending object
    name: str = ""  # the tree entry's name (empty for a commit or a tag)
    path: str | None = None  # the entry's path under the fetched commit, when reached
    detail: str = ""

    def describe(self) -> str:
        """``skills/ok/git~1, a path git refuses (fsck hasDotgit)`` and the like."""
        if self.check == "badObject":
            return f"an object that cannot be parsed ({self.detail})"
        if self.kind != "tree":
            return (f"{self.kind} {self.sha[:12]}, which git refuses as malformed "
                    f"({self.detail}; fsck {self.check})")
        where = visible(self.path) if self.path else f"the root tree {self.sha[:12]}" \
            if self.path == "" else f"{visible(self.name)!r} in tree {self.sha[:12]}"
        if self.check in _PATH_RULES:
            return f"{where}, a path git refuses (fsck {self.check})"
        return f"{where}, {_REASONS.get(self.check, self.check)}, which git refuses " \
               f"(fsck {self.check})"


class Judge:
    """Feeds on the objects of one pack; ``first`` gives the first Finding, or None."""

    def __init__(self) -> None:
        self._tree_findings: dict[bytes, Finding] = {}  # by hex tree id
        self._other: list[Finding] = []
        self._also: list[Finding] = []  # on the blobs of trees refused for another rule
        self._subtrees: dict[bytes, list[tuple[str, bytes]]] = {}
        self._ordinary: dict[bytes, bytes] = {}  # a tree judged in bulk: its raw bytes
        self._roots: list[bytes] = []
        self._gitmodules: dict[bytes, tuple[bytes, str]] = {}  # blob -> (tree, name)
        self._gitattributes: dict[bytes, tuple[bytes, str]] = {}
        self._tags: list[tuple[bytes, bytes, int]] = []  # (tag, object, declared type)
        #: (object, its type name, the objects it names, whether they are parent commits),
        #: for the caller's closure check; gitlinks name commits of other repositories.
        self.links: list[tuple[bytes, str, list[bytes], bool]] = []

    def add(self, type_num: int, sha: bytes, raw: bytes) -> None:
        if type_num == TREE:
            self._tree(sha, raw)
        elif type_num == COMMIT:
            problem = commit_problem(raw)
            if problem is not None:
                self._other.append(Finding(problem[0], "commit", sha.decode(),
                                           detail=problem[1]))
                return
            tree = raw[5:45].lower()
            self._roots.append(tree)
            self.links.append((sha, "commit", [tree], False))
            parents = []
            for line in raw[46:raw.find(b"\n\n")].split(b"\n"):
                if not line.startswith(b"parent "):
                    break
                parents.append(line[7:].lower())
            self.links.append((sha, "commit", parents, True))
        elif type_num == TAG:
            problem = tag_problem(raw)
            if problem is not None:
                self._other.append(Finding(problem[0], "tag", sha.decode(), detail=problem[1]))
            else:
                self.links.append((sha, "tag", [raw[7:47].lower()], False))
                declared = raw[53:raw.find(b"\n", 53)]  # after "object <40>\ntype "
                self._tags.append((sha, raw[7:47].lower(), _TYPE_NUMS[declared]))

    def finish(self, read: Callable[[bytes], tuple[int, bytes] | None]) -> None:
        """Check the blobs new trees name as ``.gitmodules`` / ``.gitattributes``, and that
        each tag's object is of the type its ``type`` header says (git's fsck fails a tag
        naming a tree as ``type commit``), wherever they are stored: ``read`` gives (type,
        raw) or None when the object is absent."""
        for tag, target, declared in self._tags:
            found = read(target)
            if found is not None and found[0] != declared:
                self._other.append(Finding(
                    "badTagObject", "tag", tag.decode(),
                    detail=f"its type header says {_TYPE_NAMES[declared]}, its object "
                    f"{target.decode()[:12]} is a {_TYPE_NAMES.get(found[0], '?')}"))
        for blobs, check in ((self._gitmodules, _gitmodules_problem),
                             (self._gitattributes, _gitattributes_problem)):
            for blob, (tree, name) in blobs.items():
                found = read(blob)
                if found is None:
                    continue  # the closure check names what was not sent
                problem = check(found)
                if problem is None:
                    continue
                finding = Finding(problem, "tree", tree.decode(), name)
                if tree in self._tree_findings:  # refused already; git names both
                    self._also.append(finding)
                else:
                    self._tree_findings[tree] = finding

    def findings(self) -> list[Finding]:
        """Every tree finding (the first of each tree, then what its ``.gitmodules`` or
        ``.gitattributes`` blob breaks too), as ``git fsck`` lists them, in no set order."""
        return [*self._tree_findings.values(), *self._also]

    def commit_trees(self) -> list[bytes]:
        """The root tree of every commit fed (hex), in pack order."""
        return list(self._roots)

    def first(self) -> Finding | None:
        """The first finding in path order under the fetched commits; then commits and
        tags; then a tree no fetched commit reaches (named by its id)."""
        if not self._tree_findings and not self._other:
            return None
        seen: set[bytes] = set()
        for root in self._roots:
            found = self._walk(root, "", seen)
            if found is not None:
                return found
        if self._other:
            return self._other[0]
        return next(iter(self._tree_findings.values()))

    def _walk(self, root: bytes, prefix: str, seen: set[bytes]) -> Finding | None:
        stack = [(root, prefix)]
        while stack:
            sha, where = stack.pop()
            if sha in seen:
                continue
            seen.add(sha)
            finding = self._tree_findings.get(sha)
            if finding is not None:
                return Finding(finding.check, "tree", finding.sha, finding.name,
                               where + finding.name, finding.detail)
            children = self._subtrees.get(sha) or _subtrees(self._ordinary.get(sha, b""))
            stack.extend((child, f"{where}{name}/") for name, child in reversed(children))
        return None

    def _tree(self, sha: bytes, raw: bytes) -> None:
        if not self._ordinary_tree(sha, raw):
            self._tree_by_entry(sha, raw)

    def _ordinary_tree(self, sha: bytes, raw: bytes) -> bool:
        """The common tree judged in bulk, by C-level passes: well formed, modes without a
        leading zero, every name ordinary (no rule on spellings applies), no name twice, in
        git's order, no null id. True when it is such a tree (its links recorded); False
        when it needs the entry-by-entry walk, which says what is wrong, if anything. A
        10,000-entry tree is a few milliseconds here, ~30 entry by entry."""
        try:
            entries = parsed_entries(raw)
        except (ValueError, ObjectFormatException):
            return False
        # Modes git writes, and every entry as long as its mode's text is wide: each is
        # then written as git writes it (no leading zero, sign or space before the mode).
        if not {mode for _, mode, _ in entries} <= MODE_WIDTHS.keys() or sum(
                len(name) + MODE_WIDTHS[mode] + 22 for name, mode, _ in entries) != len(raw):
            return False
        names = [name for name, _, _ in entries]
        if not names or len(set(names)) != len(names) or not all(
                _ORDINARY_NAMES.fullmatch(b"\n".join(names[at:at + _NAMES_CHUNK]))
                for at in range(0, len(names), _NAMES_CHUNK)):
            return False
        # No ordinary name holds "/": a directory's key (name + "/") is no other entry's.
        keys = [name + b"/" if mode & 0o170000 == _DIR else name for name, mode, _ in entries]
        if keys != sorted(keys) or _NULL_HEX in [child for _, _, child in entries]:
            return False
        self.links.append((sha, "tree", [c for _, mode, c in entries if mode != _GITLINK], False))
        if any(mode & 0o170000 == _DIR for _, mode, _ in entries):
            self._ordinary[sha] = raw  # its subtrees, read again only to name a finding
        return True

    def _tree_by_entry(self, sha: bytes, raw: bytes) -> None:
        subtrees: list[tuple[str, bytes]] = []
        problem: tuple[str, str] | None = None
        try:
            entries = list(tree_entries(raw))
        except ValueError:
            entries, problem = [], ("badTree", "")
        names: set[bytes] = set()
        named: list[bytes] = []
        previous: bytes | None = None
        for mode_text, name, child in entries:
            mode = int(mode_text, 8)
            shown = name.decode("utf-8", "surrogateescape")
            found = _entry_problem(mode_text, mode, name, shown, child)
            key = name + b"/" if mode & 0o170000 == _DIR else name
            if found is None and name in names:
                found = "duplicateEntries"
            elif found is None and previous is not None and key <= previous:
                found = "treeNotSorted"
            names.add(name)
            previous = key
            if found is not None and problem is None:
                problem = (found, shown)
            hexsha = child.hex().encode()
            if mode & 0o170000 == _DIR:
                subtrees.append((shown, hexsha))
            if mode != _GITLINK:
                named.append(hexsha)
            if _ORDINARY.fullmatch(name):
                continue  # neither .gitmodules nor .gitattributes in any spelling
            if mode != _LINK and any(_is_special(piece, "gitmodules", "gi7eba")
                                     for piece in _pieces(shown)):
                self._gitmodules.setdefault(hexsha, (sha, shown))
            if mode != _LINK and _is_special(shown, "gitattributes", "gi7d29"):
                self._gitattributes.setdefault(hexsha, (sha, shown))
        self.links.append((sha, "tree", named, False))
        if subtrees:
            self._subtrees[sha] = subtrees
        if problem is not None:
            self._tree_findings[sha] = Finding(problem[0], "tree", sha.decode(), problem[1])


def _subtrees(raw: bytes) -> list[tuple[str, bytes]]:
    """(name, hex id) of the directories of a tree judged ordinary."""
    return [(name.decode("utf-8", "surrogateescape"), child)
            for name, mode, child in parsed_entries(raw) if mode & 0o170000 == _DIR]


def tree_entries(raw: bytes) -> Iterator[tuple[bytes, bytes, bytes]]:
    """(mode text, name, 20-byte id) of each entry, as written; ValueError when the tree
    cannot be parsed (git's ``decode_tree_entry``: a mode of octal digits, a NUL)."""
    pos = 0
    while pos < len(raw):
        space = raw.find(b" ", pos)
        nul = raw.find(b"\0", space + 1) if space >= 0 else -1
        mode = raw[pos:space]
        if space < 0 or nul < 0 or not mode or mode.strip(b"01234567"):
            raise ValueError("malformed tree entry")
        sha = raw[nul + 1 : nul + 21]
        if len(sha) != 20:
            raise ValueError("truncated tree entry")
        yield mode, raw[space + 1 : nul], sha
        pos = nul + 21


def _entry_problem(mode_text: bytes, mode: int, name: bytes, shown: str,
                   child: bytes) -> str | None:
    if _ORDINARY.fullmatch(name):  # the common case, spared the spelling rules
        return ("zeroPaddedFilemode" if mode_text.startswith(b"0")
                else "nullSha1" if child == _NULL_SHA else None)
    if b"/" in name:
        return "fullPathname"
    if not name:
        return "emptyName"
    if name == b".":
        return "hasDot"
    if name == b"..":
        return "hasDotdot"
    if is_dotgit_name(shown):
        return "hasDotgit"
    if mode_text.startswith(b"0"):
        return "zeroPaddedFilemode"
    if child == _NULL_SHA:
        return "nullSha1"
    if mode == _LINK and any(_is_special(piece, "gitmodules", "gi7eba")
                             for piece in _pieces(shown)):
        return "gitmodulesSymlink"
    return None


def _pieces(name: str) -> Iterable[str]:
    """The name, and each part after a backslash (a separator on Windows)."""
    yield name
    yield from name.split("\\")[1:]


def _is_special(name: str, dotname: str, short: str) -> bool:
    """git's is_hfs_dot<name> / is_ntfs_dot<name> (``.gitmodules``, ``.gitattributes``)."""
    return is_hfs_dot(name, dotname) or is_ntfs_dot_generic(name, dotname, short)


def _gitmodules_problem(found: tuple[int, bytes]) -> str | None:
    type_num, data = found
    if type_num != BLOB:
        return "gitmodulesBlob"
    try:
        config = ConfigFile.from_file(io.BytesIO(data))
    except Exception:  # noqa: BLE001 - git only notes an unparsable one (gitmodulesParse)
        return None
    for section in config.sections():
        if len(section) != 2 or section[0].lower() != b"submodule":
            continue
        if not _submodule_name_ok(section[1]):
            return "gitmodulesName"
        for key, value in config.items(section):
            key = key.lower()
            if key == b"url" and not _submodule_url_ok(value):
                return "gitmodulesUrl"
            if key == b"path" and value.startswith(b"-"):
                return "gitmodulesPath"
            if key == b"update" and value.startswith(b"!"):
                return "gitmodulesUpdate"
    return None


def _submodule_name_ok(name: bytes) -> bool:
    """submodule.c check_submodule_name: not empty, no ``..`` component (``/`` or ``\\``)."""
    return bool(name) and b".." not in re.split(rb"[/\\]", name)


def _submodule_url_ok(url: bytes) -> bool:
    """submodule-config.c check_submodule_url, in the parts that matter for safety: no
    option for a command line, no newline once URL-decoded."""
    if url.startswith(b"-"):
        return False
    decoded = re.sub(rb"%([0-9a-fA-F]{2})", lambda m: bytes([int(m.group(1), 16)]), url)
    return b"\n" not in decoded


def _gitattributes_problem(found: tuple[int, bytes]) -> str | None:
    type_num, data = found
    if type_num != BLOB:
        return "gitattributesBlob"
    if len(data) > ATTR_MAX_FILE_SIZE:
        return "gitattributesLarge"
    text = data.split(b"\0", 1)[0]
    if any(len(line) >= ATTR_MAX_LINE_LENGTH for line in text.split(b"\n")):
        return "gitattributesLineLength"
    return None
