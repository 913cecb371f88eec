"""The quick look of every item at once (store/quicklook.py), half of it in a forked child:
a status judged so says exactly what one judged item by item says, whatever changed in
either half, and the child's verdicts are the ones used."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import make_skill, settle_files

from librarian.core import halves
from librarian.ops.retention import retain
from librarian.ops.status import library_status
from librarian.store import quicklook, statcache
from librarian.store.library import Library

NAMES = [f"skill-{i}" for i in range(8)]  # the child judges the first four


@pytest.fixture
def settled(library: Path, sources: Path, monkeypatch: pytest.MonkeyPatch) -> Library:
    settle_files(monkeypatch)
    lib = Library(library)
    for name in NAMES:
        retain(lib, make_skill(sources, name, extra_files={"notes/a.md": f"{name}\n"}))
    assert library_status(lib).clean  # writes the stat cache
    return lib


def _states(lib: Library, monkeypatch: pytest.MonkeyPatch, *, split: bool) -> dict[str, str]:
    monkeypatch.setattr(halves, "LEAST", 1 if split else 10**9)
    return {i.path: i.status for i in library_status(lib).items}


def _append(item: Path) -> None:
    with (item / "notes" / "a.md").open("a") as out:
        out.write("more\n")


def _chmod(item: Path) -> None:
    (item / "notes" / "a.md").chmod(0o755)


def _link(item: Path) -> None:
    (item / "notes" / "a.md").unlink()
    (item / "notes" / "a.md").symlink_to(item / "SKILL.md")


MUTATIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "content edited": (_append, "modified"),
    "file added": (lambda item: (item / "notes" / "b.md").write_text("b\n"), "modified"),
    "file removed": (lambda item: (item / "notes" / "a.md").unlink(), "modified"),
    "made executable": (_chmod, "modified"),
    "a link in a file's place": (_link, "modified"),
    "a directory replaced by a link loop": (
        lambda item: (shutil.rmtree(item / "notes"), (item / "notes").symlink_to("notes")),
        "modified"),
    "an empty directory added": (lambda item: (item / "empty").mkdir(), "clean"),
    "item removed": (shutil.rmtree, "missing"),
}


@pytest.mark.skipif(halves.processors() < 2, reason="one processor: nothing is forked")
@pytest.mark.parametrize("mutation", MUTATIONS)
def test_a_change_in_either_half_is_seen_as_item_by_item(
    settled: Library, monkeypatch: pytest.MonkeyPatch, mutation: str
) -> None:
    change, state = MUTATIONS[mutation]
    for name in (NAMES[1], NAMES[6]):  # one the child judges, one this process does
        change(settled.root / "skills" / name)
    split = _states(settled, monkeypatch, split=True)
    assert split == _states(settled, monkeypatch, split=False)
    assert split[f"skills/{NAMES[1]}"] == split[f"skills/{NAMES[6]}"] == state
    assert {path for path, s in split.items() if s != "clean"} <= {
        f"skills/{NAMES[1]}", f"skills/{NAMES[6]}"}


@pytest.mark.skipif(halves.processors() < 2, reason="one processor: nothing is forked")
def test_the_childs_verdicts_are_used(settled: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    looked_here: list[str] = []  # what this process looked at (the child's calls stay there)
    for module in (quicklook, statcache):
        real = module.unchanged

        def counted(directory: str, *args: object,
                    real: Callable[..., bool] = real) -> bool:
            looked_here.append(directory.rsplit("/", 1)[1])
            return real(directory, *args)

        monkeypatch.setattr(module, "unchanged", counted)
    assert set(_states(settled, monkeypatch, split=True).values()) == {"clean"}
    assert looked_here == NAMES[4:], "the first half judged by the child alone"
    looked_here.clear()
    assert set(_states(settled, monkeypatch, split=False).values()) == {"clean"}
    assert looked_here == NAMES, "all judged here without the split"
