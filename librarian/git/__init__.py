"""Git mechanics over dulwich, and the only package that imports it.

Objects, trees and commits (``repo``, ``objectstore``, ``rawtree``, ``trees``, ``ids``), refs
by compare-and-swap, revisions (``revparse``), the index read and spliced (``indexscan``,
``index``, ``indexmemo``), fetching a source (``remote``, ``transfer``, ``localfetch``,
``quarantine``), git's fsck rules (``fsck``, ``fsckheaders``), packs, release tags, the
per-file three-way merge (``merge``), ignore rules and the few settings librarian reads.
It knows nothing of items or libraries.

May import: ``librarian.trust``, ``librarian.content``, ``librarian.formats``,
``librarian.core``, ``librarian.errors``, dulwich. Other packages import the names below,
not its modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from librarian.core.lazy import lazy_exports

if TYPE_CHECKING:
    from librarian.git.blobsize import blob_size as blob_size
    from librarian.git.ids import CommitInfo as CommitInfo
    from librarian.git.ignores import GitIgnores as GitIgnores
    from librarian.git.index import IndexEntry as IndexEntry
    from librarian.git.index import IndexLockedError as IndexLockedError
    from librarian.git.index import splice_index as splice_index
    from librarian.git.indexmemo import known_clean as known_clean
    from librarian.git.indexscan import IndexFormatError as IndexFormatError
    from librarian.git.indexscan import read_index as read_index
    from librarian.git.indexscan import scan_index as scan_index
    from librarian.git.merge import FileConflict as FileConflict
    from librarian.git.merge import FileVersion as FileVersion
    from librarian.git.merge import describe_hunk as describe_hunk
    from librarian.git.merge import merge_files as merge_files
    from librarian.git.merge import merge_marked as merge_marked
    from librarian.git.packs import consolidate_packs as consolidate_packs
    from librarian.git.quarantine import sweep as sweep
    from librarian.git.rawtree import entry_set as entry_set
    from librarian.git.remote import FetchResult as FetchResult
    from librarian.git.remote import fetch_ref as fetch_ref
    from librarian.git.remote import parse_remote as parse_remote
    from librarian.git.remote import strip_credentials as strip_credentials
    from librarian.git.remote import url_problem as url_problem
    from librarian.git.repo import GitStore as GitStore
    from librarian.git.repo import ObjectId as ObjectId
    from librarian.git.repo import TreeEntry as TreeEntry
    from librarian.git.revparse import resolve as resolve
    from librarian.git.revparse import walk_history as walk_history
    from librarian.git.revparse import walk_log as walk_log
    from librarian.git.settings import core_worktree as core_worktree
    from librarian.git.settings import hooks_path as hooks_path
    from librarian.git.settings import is_branch_ref as is_branch_ref
    from librarian.git.tags import dirty_paths as dirty_paths
    from librarian.git.tags import remote_head as remote_head
    from librarian.git.tags import remote_refs as remote_refs
    from librarian.git.tags import tag_bytes as tag_bytes
    from librarian.git.tags import tagger as tagger
    from librarian.git.tags import write_tag as write_tag
    from librarian.git.team import HungUp as HungUp
    from librarian.git.team import RemoteMoved as RemoteMoved
    from librarian.git.team import clone_repository as clone_repository
    from librarian.git.team import copy_commit as copy_commit
    from librarian.git.team import fetch_branch as fetch_branch
    from librarian.git.team import merge_base as merge_base
    from librarian.git.team import push_branch as push_branch
    from librarian.git.team import set_config as set_config
    from librarian.git.team import upstream_of as upstream_of
    from librarian.git.trees import blob_sha1 as blob_sha1
    from librarian.git.trees import entry_changes as entry_changes
    from librarian.git.trees import make_tree as make_tree

__getattr__ = lazy_exports(__name__, {
    "CommitInfo": "ids",
    "FetchResult": "remote",
    "FileConflict": "merge",
    "FileVersion": "merge",
    "GitIgnores": "ignores",
    "GitStore": "repo",
    "HungUp": "team",
    "IndexEntry": "index",
    "IndexFormatError": "indexscan",
    "IndexLockedError": "index",
    "ObjectId": "repo",
    "RemoteMoved": "team",
    "TreeEntry": "repo",
    "blob_sha1": "trees",
    "blob_size": "blobsize",
    "clone_repository": "team",
    "consolidate_packs": "packs",
    "copy_commit": "team",
    "core_worktree": "settings",
    "describe_hunk": "merge",
    "dirty_paths": "tags",
    "entry_changes": "trees",
    "entry_set": "rawtree",
    "fetch_branch": "team",
    "fetch_ref": "remote",
    "hooks_path": "settings",
    "is_branch_ref": "settings",
    "known_clean": "indexmemo",
    "make_tree": "trees",
    "merge_base": "team",
    "merge_files": "merge",
    "merge_marked": "merge",
    "parse_remote": "remote",
    "push_branch": "team",
    "read_index": "indexscan",
    "remote_head": "tags",
    "remote_refs": "tags",
    "resolve": "revparse",
    "scan_index": "indexscan",
    "set_config": "team",
    "splice_index": "index",
    "strip_credentials": "remote",
    "sweep": "quarantine",
    "tag_bytes": "tags",
    "tagger": "tags",
    "upstream_of": "team",
    "url_problem": "remote",
    "walk_history": "revparse",
    "walk_log": "revparse",
    "write_tag": "tags",
})
