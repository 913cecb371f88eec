"""Each source is judged on its own: a signed source whose newest release is refused (an
untrusted signer) no longer blocks the others. `update` installs the clean ones in one
commit and exits 4 naming the refused one; `outdated` shows the others' plan and the
refusal; the refused source is left exactly as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import cli, commit_count, head
from support.sources_helpers import Upstream
from support.trust_helpers import Publisher, library_refs

from librarian.formats.config import load_lock
from librarian.trust.keys import SigningKey, generate_key

Cap = pytest.CaptureFixture[str]


@pytest.fixture
def keys(tmp_path: Path) -> tuple[SigningKey, SigningKey]:
    (tmp_path / "keys").mkdir()
    return (generate_key(tmp_path / "keys" / "trusted", comment="pub@example.org"),
            generate_key(tmp_path / "keys" / "stranger", comment="x@example.org"))


@pytest.fixture
def setup(library: Path, tmp_path: Path, keys: tuple[SigningKey, SigningKey],
          capsys: Cap) -> tuple[Path, Upstream, Publisher]:
    trusted, _ = keys
    open_up = Upstream(tmp_path / "open.git")
    open_up.skill("skills/notes").commit("first")
    team = Publisher(tmp_path / "team.git")
    team.skill("skills/pdf").commit("first")
    team.release(trusted, 1)
    assert cli(capsys, library, "source", "add", "open", open_up.url).code == 0
    assert cli(capsys, library, "source", "add", "team", team.url,
               "--trust", trusted.public.line()).code == 0
    assert cli(capsys, library, "update").code == 0
    return library, open_up, team


def _team_state(library: Path) -> tuple[object, ...]:
    refs = library_refs(library)
    return (load_lock((library / "librarian.lock").read_bytes())["team"],
            refs.get(b"refs/librarian/sources/team"), refs.get(b"refs/librarian/releases/team"),
            (library / "sources/team/skills/pdf/SKILL.md").read_bytes())


def test_an_untrusted_release_does_not_block_the_other_sources(
    setup: tuple[Path, Upstream, Publisher], keys: tuple[SigningKey, SigningKey], capsys: Cap
) -> None:
    library, open_up, team = setup
    _, stranger = keys
    open_up.skill("skills/notes", body="Two.\n").skill("skills/more").commit("second")
    team.skill("skills/pdf", body="Evil.\n").commit("second")
    team.release(stranger, 2)
    before, team_before = commit_count(library), _team_state(library)

    plan = cli(capsys, library, "outdated", "--json")
    assert plan.code == 4, plan.err
    assert [p["source"] for p in plan.json["plans"]] == ["open"]
    assert plan.json["plans"][0]["counts"]["add"] == 1
    assert [r["source"] for r in plan.json["refused"]] == ["team"]
    assert stranger.public.fingerprint in plan.json["refused"][0]["error"]
    assert "team" in plan.err and "librarian: error:" in plan.err
    human = cli(capsys, library, "outdated")
    assert human.code == 4 and "open:" in human.out and "team: refused" in human.out

    result = cli(capsys, library, "update", "--json")
    assert result.code == 4, result.err
    assert result.json["commit"] == head(library) and commit_count(library) == before + 1
    assert result.json["sources"] == ["open"]
    assert (library / "sources/open/skills/more/SKILL.md").is_file()
    assert (library / "sources/open/skills/notes/SKILL.md").read_text().endswith("Two.\n")
    assert _team_state(library) == team_before
    errors = [line for line in result.err.splitlines() if line.startswith("librarian: error:")]
    assert len(errors) == 1 and "team" in errors[0]
    assert stranger.public.fingerprint in errors[0]
    # once the refusal is gone, the next update is an ordinary one
    trusted, _ = keys
    team.release(trusted, 3)
    assert cli(capsys, library, "update").code == 0
    assert (library / "sources/team/skills/pdf/SKILL.md").read_text().endswith("Evil.\n")


def test_a_refusal_with_nothing_else_to_install_still_exits_4(
    setup: tuple[Path, Upstream, Publisher], keys: tuple[SigningKey, SigningKey], capsys: Cap
) -> None:
    library, _, team = setup
    team.skill("skills/pdf", body="Evil.\n").commit("second")
    team.release(keys[1], 2)
    old = head(library)
    for command in ("update", "outdated", "update team"):
        result = cli(capsys, library, *command.split())
        assert result.code == 4, (command, result.err)
        assert "nothing was changed" in result.err
    assert head(library) == old
