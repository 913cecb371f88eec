"""The signed-release part of ``demo``: a key, a signed release, a subscriber that trusts
the key, a forged release refused, and an offline ``verify``.

Runs after the shared-library chapter, on the same team library: the team signs its HEAD
with a fresh ed25519 key, the demo library subscribes to it a second time (``team-signed``)
trusting only that key, installs release 1, then someone without the key publishes
release 2 over a new commit; ``update`` refuses it with exit 4 and changes nothing.
"""

from __future__ import annotations

from pathlib import Path

from librarian.agents.claude_manifests import GENERATED
from librarian.cli.demo.steps import DemoStep
from librarian.cli.render import error_line, receipt_text
from librarian.cli.render_sources import update_report_text, verify_text
from librarian.core.events import trailers
from librarian.core.model import ItemFile
from librarian.errors import TrustError
from librarian.library import Library
from librarian.ops.publish import release
from librarian.sources.releases import verify_sources
from librarian.sources.subscriptions import add_source
from librarian.sources.update import update
from librarian.trust.keys import generate_key
from librarian.txn import Transaction

SOURCE = "team-signed"


def tour(library: Library, workspace: Path) -> list[DemoStep]:
    steps: list[DemoStep] = []
    shared_root = workspace / "team-library"
    key_path = workspace / "keys" / "team-release"
    key = generate_key(key_path, comment="team@example.org")
    steps.append(DemoStep(
        "Signed releases: the team makes an ordinary OpenSSH ed25519 key (an existing "
        "~/.ssh/id_ed25519 works too)",
        f"librarian key generate {key_path}",
        f"wrote {key_path} (private, mode 0600) and {key_path}.pub\n{key.public.line()}\n"
        f"fingerprint {key.public.fingerprint}"))
    receipt = release(shared_root, key_path)
    steps.append(DemoStep(
        "The team signs its HEAD: an annotated tag holding the statement of every item's "
        "digest, signed as `git tag -s` signs (plain `git tag -v` verifies it)",
        f"librarian --library {shared_root} release --key {key_path}",
        receipt_text(receipt) + f"\n  {receipt.items} items, signed by {receipt.key}, "
        f"expires {receipt.expires}"))
    added = add_source(library, SOURCE, str(shared_root), trust=(f"{key_path}.pub",))
    steps.append(DemoStep("Subscribe trusting that key only: only signed releases install",
                          f"librarian source add {SOURCE} {shared_root} --trust {key_path}.pub",
                          receipt_text(added)))
    steps.append(DemoStep("Install release 1: the signature, the version, the expiry and "
                          "every digest are checked before anything is written",
                          f"librarian update {SOURCE}",
                          update_report_text(update(library, [SOURCE]))))

    mallory = workspace / "keys" / "not-the-team"
    generate_key(mallory, comment="mallory@example.org")
    _change_upstream(Library(shared_root, GENERATED))
    release(shared_root, mallory)
    steps.append(DemoStep(
        "Someone with write access to the team's repository, but not the team's key, "
        "publishes release 2",
        f"(in {shared_root}) edit a recipe, commit, librarian release --key {mallory}",
        "librarian-release/2 signed by another key"))
    try:
        update(library, [SOURCE])
        refused = "(installed?)"
    except TrustError as exc:  # what `librarian update` prints, exit 4
        refused = f"{error_line(exc.message, exc.hint)}\n(exit 4: nothing was changed)"
    steps.append(DemoStep("The subscriber refuses it: exit 4, nothing changed",
                          f"librarian update {SOURCE}", refused))
    steps.append(DemoStep("Re-check the installed release offline, any time",
                          f"librarian verify {SOURCE}",
                          verify_text(verify_sources(library, [SOURCE]))))
    return steps


def _change_upstream(shared: Library) -> None:
    path = "recipes/word-count"
    with Transaction(shared) as tx:
        files = tuple(ItemFile(f.path, f.executable, f.data + b"# counts words\n")
                      if f.path == "recipe.yaml" else f for f in tx.base.files(tx.base.find(path)))
        tx.put_dir(path, files)
        tx.commit("revise recipe word-count", trailers("revise", item=path))
