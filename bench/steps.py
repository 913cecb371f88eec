"""Where one command's time goes, step by step, in-process.

    cd LIBRARY && PYTHONPATH=TREE python TREE/bench/steps.py update [ARGS...]

Runs ``librarian ARGS`` once in this process with the functions below wrapped by a wall
clock, then prints on stderr the import time, the total, and each step's time summed over
its calls (a step that calls itself counts its inner calls again: read the outer figure).
Steps nest (``commit_tree`` holds ``swap_in``); read them as a tree, not as a sum. Never
part of the test suite; pair it with ``bench/scale.py`` for figures to quote.
"""

from __future__ import annotations

import functools
import importlib
import sys
import time
from collections.abc import Callable
from typing import Any

STEPS = (
    ("librarian.txn.transaction", "Transaction.__enter__"),
    ("librarian.library.snapshot", "load_lock"),
    ("librarian.library.guard", "conflicted_paths"),
    ("librarian.sources.update", "fetch_source"),
    ("librarian.sources.update", "plan_source"),
    ("librarian.sources.plan", "changed_since"),
    ("librarian.sources.plan", "read_collection"),
    ("librarian.sources.update", "_commit"),
    ("librarian.sources.update", "make_tree"),
    ("librarian.git.repo", "GitStore.with_paths"),
    ("librarian.sources.update", "dump_lock"),
    ("librarian.txn.transaction", "Transaction.commit_tree"),
    ("librarian.git.repo", "GitStore.flush"),
    ("librarian.txn.transaction", "staging.stage_changes"),
    ("librarian.txn.transaction", "apply.swap_in"),
    ("librarian.txn.apply", "splice_index"),
    ("librarian.txn.transaction", "TreeMemo.save_all"),
    ("librarian.cli.render_sources", "update_output_text"),
)


def _wrap(timings: dict[str, float], module_name: str, attribute: str) -> None:
    owner: Any = importlib.import_module(module_name)
    *path, name = attribute.split(".")
    for part in path:
        owner = getattr(owner, part)
    original: Callable[..., Any] = getattr(owner, name)

    @functools.wraps(original)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            timings[attribute] = timings.get(attribute, 0.0) + time.perf_counter() - start

    setattr(owner, name, timed)


def main() -> None:
    started = time.perf_counter()
    import librarian.cli.main  # noqa: F401  (the command table: what every command imports)

    imported = time.perf_counter() - started
    timings: dict[str, float] = {}
    for module_name, attribute in STEPS:
        _wrap(timings, module_name, attribute)
    from librarian.cli.entry import entry

    sys.argv = ["librarian", *sys.argv[1:]]
    code: object = 0
    try:
        entry()
    except SystemExit as exit_:
        code = exit_.code
    total = time.perf_counter() - started
    print(f"exit {code}; imports {imported * 1000:.1f} ms, total {total * 1000:.1f} ms",
          file=sys.stderr)
    for _, attribute in STEPS:
        if attribute in timings:
            print(f"  {attribute}: {timings[attribute] * 1000:.1f} ms", file=sys.stderr)


if __name__ == "__main__":
    main()
