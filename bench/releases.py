"""Benchmark what signing costs: ``release``, then a first and a no-op ``update`` of the same
collection followed signed and unsigned, and ``verify``.

    python bench/releases.py [--items 2000] [--signed-first]

Builds a plain git repository of N one-file skills (needs the git binary), signs its HEAD
with a fresh ed25519 key, and times, in process through the library functions the
commands call: ``release``; for an unsigned and a signed subscriber, the first ``update``
(install) and a second one (nothing to do); ``verify`` of the signed one (every committed
digest recomputed). Never part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from librarian.agents.claude_manifests import GENERATED
from librarian.library.layout import Library
from librarian.ops.create import init_library
from librarian.ops.publish import release
from librarian.sources.releases import verify_sources
from librarian.sources.subscriptions import add_source
from librarian.sources.update import update
from librarian.trust.keys import generate_key


def timed(label: str, action: Callable[[], object]) -> None:
    start = time.perf_counter()
    action()
    print(f"{label:<28} {time.perf_counter() - start:6.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--signed-first", action="store_true",
                        help="time the signed subscriber first (the first one pays for "
                        "the process's warm-up)")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-releases-"))
    env = dict(os.environ, GIT_AUTHOR_NAME="P", GIT_AUTHOR_EMAIL="p@example.org",
               GIT_COMMITTER_NAME="P", GIT_COMMITTER_EMAIL="p@example.org")
    publisher = base / "publisher"
    publisher.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=publisher, check=True, env=env)
    for i in range(args.items):
        item = publisher / "skills" / f"s{i}"
        item.mkdir(parents=True)
        (item / "SKILL.md").write_text(f"---\nname: s{i}\ndescription: Skill {i}.\n---\nDo.\n")
    subprocess.run(["git", "add", "."], cwd=publisher, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "items"], cwd=publisher, check=True, env=env)
    key = base / "release"
    generate_key(key)
    timed(f"release ({args.items} items)", lambda: release(publisher, key))
    for signed in (True, False) if args.signed_first else (False, True):
        kind = "signed" if signed else "unsigned"
        root = base / kind
        init_library(root, "bench", GENERATED)
        library = Library(root, GENERATED)
        add_source(library, "team", str(publisher),
                   trust=(f"{key}.pub",) if signed else ())
        timed(f"first update ({kind})", lambda lib=library: update(lib))
        timed(f"no-op update ({kind})", lambda lib=library: update(lib))
        if signed:
            timed("verify", lambda lib=library: verify_sources(lib))
    print(f"(left in {base})")


if __name__ == "__main__":
    main()
