"""A hostile world, as a table: each case builds a library an attacker or an
unlucky user could hand librarian, runs one command, and asserts the exit code, exactly one
error line naming the problem, and that nothing changed (the branch, the work tree,
``.git/librarian``, and any directory outside the library a link points at)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.helpers import (
    assert_one_error_line,
    git,
    library_state,
    make_recipe,
    make_skill,
    run_main,
    skill_md,
    tree_snapshot,
    write,
)
from support.sources_helpers import Upstream

from librarian.agents.claude_manifests import GENERATED
from librarian.gate.exposure import expose
from librarian.library.layout import Library
from librarian.ops.retention import retain
from librarian.sources.subscriptions import add_source

ZWNJ = "\u200c"
SECRET = "kT9" + "vQ2mZx7Lr4Hs8Wd1Np6Bc3Yf5Jg0Ue/Ai+Ro7"
KEY = ("-----BEGIN " + "PRIVATE KEY-----\n"
       + "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n" * 3
       + "-----END " + "PRIVATE KEY-----\n")
LAUGHS = "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}' if i else 'lol'] * 9)}]\n" for i in range(9))


@dataclass
class Ctx:
    library: Path
    src: Path
    outside: Path
    tmp: Path

    def commit_all(self, message: str = "by hand") -> None:
        git(self.library, "add", "-A")
        git(self.library, "commit", "-q", "--no-verify", "-m", message)

    def skill(self, name: str, extra: dict[str, bytes | str] | None = None, **kw: object) -> Path:
        return make_skill(self.src, name, extra_files=extra or {}, **kw)  # type: ignore[arg-type]

    def retained(self, name: str = "kept") -> str:
        retain(Library(self.library, GENERATED), make_skill(self.tmp / "first", name))
        return name


Setup = Callable[[Ctx], list[str]]


@dataclass(frozen=True)
class Case:
    id: str
    setup: Setup
    code: int
    mentions: str


def _retain_with(files: dict[str, bytes | str]) -> Setup:
    def setup(ctx: Ctx) -> list[str]:
        return ["retain", str(ctx.skill("bad", files))]
    return setup


def _frontmatter(extra: str) -> Setup:
    def setup(ctx: Ctx) -> list[str]:
        data = f"---\nname: bad\ndescription: Does a thing.\n{extra}---\nBody.\n".encode()
        return ["retain", str(ctx.skill("bad", skill_md_bytes=data))]
    return setup


def _revise_with(files: dict[str, bytes | str], data: bytes | None = None) -> Setup:
    def setup(ctx: Ctx) -> list[str]:
        name = ctx.retained()
        return ["revise", name, str(ctx.skill(name, files, skill_md_bytes=data))]
    return setup


def _linked_top(folder: str, command: str = "retain") -> Setup:
    def setup(ctx: Ctx) -> list[str]:
        target = ctx.library / folder
        if target.exists():
            target.rmdir()  # the fresh library's empty folder
        target.symlink_to(ctx.outside, target_is_directory=True)
        ctx.commit_all("a link arrives by git pull")
        if command == "retain":
            return ["retain", str(ctx.skill("new"))] + (["--draft"] if folder == "drafts" else [])
        return [command]
    return setup


def _linked_state(entry: str, command: str = "retain") -> Setup:
    def setup(ctx: Ctx) -> list[str]:
        state = ctx.library / ".git" / "librarian"
        path = state / entry
        if entry == "":
            state.rename(ctx.outside / "state")
            path = state
        elif path.is_dir():
            shutil.rmtree(path)  # the cache may hold what init remembered
        elif path.exists():
            path.unlink()
        path.symlink_to(ctx.outside)
        return ["retain", str(ctx.skill("new"))] if command == "retain" else command.split()
    return setup


def _library_yaml(policy: str = "", extra: str = "") -> Setup:
    def setup(ctx: Ctx) -> list[str]:
        text = (ctx.library / "library.yaml").read_text()
        if policy:
            key = policy.split(":")[0]
            text = re.sub(rf"(?m)^  {key}: .*$", f"  {policy}", text)
        (ctx.library / "library.yaml").write_text(text + extra)
        ctx.commit_all()
        return ["retain", str(ctx.skill("new"))]
    return setup


def _git_state(kind: str) -> Setup:
    def setup(ctx: Ctx) -> list[str]:
        lib = ctx.library
        if kind == "merge-head":
            head = git(lib, "rev-parse", "HEAD").stdout.decode().strip()
            (lib / ".git" / "MERGE_HEAD").write_text(head + "\n")
        elif kind == "rebase":
            (lib / ".git" / "rebase-merge").mkdir()
        elif kind == "conflict":
            git(lib, "checkout", "-q", "-b", "other")
            write(lib / "NOTES.txt", "theirs\n")
            ctx.commit_all("theirs")
            git(lib, "checkout", "-q", "-")
            write(lib / "NOTES.txt", "ours\n")
            ctx.commit_all("ours")
            git(lib, "merge", "-q", "other", check=False)
            (lib / ".git" / "MERGE_HEAD").unlink()  # the conflicted index alone
        elif kind == "worktree":
            git(lib, "config", "core.worktree", str(ctx.outside))
        elif kind == "unborn":
            git(lib, "checkout", "-q", "--orphan", "fresh")
        return ["retain", str(ctx.skill("new"))]
    return setup


def _journal(**fields: object) -> Setup:
    def setup(ctx: Ctx) -> list[str]:
        (ctx.outside / "victim").mkdir()
        write(ctx.outside / "victim" / "keep.txt", "precious\n")
        head = git(ctx.library, "rev-parse", "HEAD").stdout.decode().strip()
        journal: object = {"tx": "0123456789ab", "branch": "refs/heads/main", "base": head,
                           "new": head, "paths": ["tools.yaml"], **fields}
        if fields.get("whole") is not None:
            journal = fields["whole"]
        path = ctx.library / ".git" / "librarian" / "journal.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(journal))
        return ["retain", str(ctx.skill("new"))]
    return setup


def _recover_forged(ctx: Ctx) -> list[str]:
    _journal(tx="../../../../victim")(ctx)
    return ["recover"]


def _upstream(ctx: Ctx) -> Upstream:
    up = Upstream(ctx.tmp / "up")
    up.skill("skills/ok").commit("first")
    add_source(Library(ctx.library, GENERATED), "team", up.url)
    return up


def _update_with(change: Callable[[Upstream], object]) -> Setup:
    def setup(ctx: Ctx) -> list[str]:
        up = _upstream(ctx)
        from librarian.sources.update import update
        update(Library(ctx.library, GENERATED))
        change(up)
        up.commit("hostile")
        return ["update"]
    return setup


def _source_add(url: str, *extra: str) -> Setup:
    def setup(ctx: Ctx) -> list[str]:
        return ["source", "add", "team", url, *extra]
    return setup


def _hand_url(url: str) -> Setup:
    def setup(ctx: Ctx) -> list[str]:
        _upstream(ctx)
        path = ctx.library / "library.yaml"
        text = path.read_text()
        old = str(ctx.tmp / "up")
        path.write_text(text.replace(old, url))
        ctx.commit_all("a hostile URL arrives by git pull")
        return ["update"]
    return setup


def _staged(files: dict[str, bytes | str], link: str | None = None) -> Setup:
    def setup(ctx: Ctx) -> list[str]:
        for rel, data in files.items():
            write(ctx.library / rel, data)
        if link is not None:
            (ctx.library / link).symlink_to("/etc/passwd")
        git(ctx.library, "add", "-A")
        return ["check", "--staged"]
    return setup


def _committed_tools(tool: str, recipe: str = "recipes/count", digest: str | None = None,
                     run: str | None = None) -> Setup:
    def setup(ctx: Ctx) -> list[str]:
        lib = Library(ctx.library, GENERATED)
        retain(lib, make_recipe(ctx.tmp / "r", "count"))
        receipt = expose(lib, "count")
        real = digest or str(receipt.digest)
        (ctx.library / "tools.yaml").write_text(
            f"tools:\n  {json.dumps(tool)}:\n    recipe: {json.dumps(recipe)}\n"
            f"    digest: {json.dumps(real)}\n")
        ctx.commit_all("hand-edited tools.yaml")
        return ["run", run or tool, "--yes", "--arg", "path=/dev/null"]
    return setup


def _locked(edit: Callable[[str], str], command: str = "check") -> Setup:
    def setup(ctx: Ctx) -> list[str]:
        up = _upstream(ctx)
        from librarian.sources.update import update
        update(Library(ctx.library, GENERATED))
        del up
        path = ctx.library / "librarian.lock"
        path.write_text(edit(path.read_text()))
        ctx.commit_all("a hand-edited lock")
        return command.split()
    return setup


def _zero_digest(text: str) -> str:
    return re.sub(r"sha256:[0-9a-f]{64}", "sha256:" + "0" * 64, text)


def _locked_run(ctx: Ctx) -> list[str]:
    return _committed_tools("count", run="count")(ctx)


def _state_link_run(entry: str) -> Setup:
    def setup(ctx: Ctx) -> list[str]:
        args = _locked_run(ctx)
        _linked_state(entry, "x")(ctx)
        return args
    return setup


CASES = [
    # retain: paths git reads as .git, Windows names, collisions
    Case("retain-git~1", _retain_with({"git~1/config": "x"}), 2, "git~1"),
    Case("retain-GIT~1", _retain_with({"GIT~1/hooks/post-checkout": "x"}), 2, "GIT~1"),
    Case("retain-zwnj-dotgit", _retain_with({f".g{ZWNJ}it/config": "x"}), 2, ".git"),
    Case("retain-feff-dotgit", _retain_with({"\ufeff.git/config": "x"}), 2, ".git"),
    Case("retain-dotgit-trailing-dot", _retain_with({".git./config": "x"}), 2, ".git"),
    Case("retain-dotgit-trailing-space", _retain_with({".git /config": "x"}), 2, ".git"),
    Case("retain-dotgit-stream", _retain_with({".git::$INDEX_ALLOCATION/x": "x"}), 2, ".git"),
    Case("retain-dotgitmodules", _retain_with({"sub/.gitmodules": "[submodule]\n"}), 2,
         ".gitmodules"),
    Case("retain-gitmod~1", _retain_with({"GITMOD~1": "x"}), 2, ".gitmodules"),
    Case("retain-case-collision", _retain_with({"Notes.md": "a", "notes.md": "b"}), 2,
         "one name"),
    Case("retain-dir-case-collision", _retain_with({"Ref/a.md": "a", "ref/b.md": "b"}), 2,
         "one name"),
    Case("retain-nfc-nfd", _retain_with({"caf\u00e9.md": "a", "cafe\u0301.md": "b"}), 2,
         "one name"),
    Case("retain-windows-con", _retain_with({"CON": "x"}), 2, "reserved"),
    Case("retain-windows-aux-ext", _retain_with({"docs/aux.txt": "x"}), 2, "reserved"),
    Case("retain-windows-colon", _retain_with({"a:b.md": "x"}), 2, "Windows"),
    Case("retain-trailing-dot", _retain_with({"notes.": "x"}), 2, "period"),
    # retain: YAML that is not plain data, secrets
    Case("retain-billion-laughs", _frontmatter("metadata:\n  x: y\n" + LAUGHS), 2, "aliases"),
    Case("retain-python-tag", _frontmatter("x: !!python/object:os.system ls\n"), 2, "tag"),
    Case("retain-binary-tag", _frontmatter("x: !!binary aGVsbG8=\n"), 2, "tag"),
    Case("retain-aws-secret-alone", _retain_with({"creds.ini": f"aws_secret_access_key = "
                                                  f"{SECRET}\n"}), 2, "AWS secret"),
    Case("retain-env-local", _retain_with({".env.local": "TOKEN=1\n"}), 2, ".env"),
    Case("retain-private-key", _retain_with({"notes.txt": KEY}), 2, "private key"),
    # retain into a hostile library
    Case("retain-skills-linked", _linked_top("skills"), 2, "symbolic link"),
    Case("retain-drafts-linked", _linked_top("drafts"), 2, "symbolic link"),
    Case("retain-state-linked", _linked_state(""), 2, ".git/librarian"),
    Case("retain-usage-linked", _linked_state("usage.jsonl"), 2, "usage.jsonl"),
    Case("retain-lock-linked", _linked_state("lock"), 2, "lock"),
    Case("retain-cache-linked", _linked_state("cache"), 2, "cache"),
    Case("retain-stage-linked", _linked_state("stage"), 2, "stage"),
    Case("retain-during-merge", _git_state("merge-head"), 2, "merge"),
    Case("retain-during-rebase", _git_state("rebase"), 2, "rebase"),
    Case("retain-conflicted-index", _git_state("conflict"), 2, "conflicts"),
    Case("retain-core-worktree", _git_state("worktree"), 2, "core.worktree"),
    Case("retain-unborn-branch", _git_state("unborn"), 2, "not committed"),
    # library.yaml
    Case("policy-10e30", _library_yaml("max_file_bytes: " + "1" + "0" * 30), 2, "whole number"),
    Case("policy-2e62", _library_yaml(f"max_item_files: {2 ** 62}"), 2, "whole number"),
    Case("policy-negative", _library_yaml("max_item_bytes: -1"), 2, "whole number"),
    Case("policy-float", _library_yaml("max_item_bytes: 1.5"), 2, "whole number"),
    Case("library-yaml-bomb", _library_yaml(extra="x-bomb:\n" + "".join(
        "  " + line for line in LAUGHS.splitlines(True))), 2, "aliases"),
    Case("library-yaml-tag", _library_yaml(extra="x: !!set {a}\n"), 2, "tag"),
    # revise
    Case("revise-git~1", _revise_with({"git~1/x": "x"}), 2, "git~1"),
    Case("revise-case-collision", _revise_with({"A.md": "a", "a.md": "b"}), 2, "one name"),
    Case("revise-bomb", _revise_with({}, f"---\nname: kept\ndescription: D.\n{LAUGHS}---\n"
                                         .encode()), 2, "aliases"),
    Case("revise-aws-secret", _revise_with({"c.env.sh": f"AWS_SECRET_ACCESS_KEY={SECRET}\n"}),
         2, "AWS secret"),
    # update from a hostile upstream, and hostile URLs
    Case("update-sources-linked", _linked_top("sources", "update"), 2, "symbolic link"),
    Case("update-ext-url", _hand_url("ext::sh -c touch% /tmp/pwned"), 2, "remote helper"),
    Case("update-fd-url", _hand_url("fd::3"), 2, "remote helper"),
    Case("source-add-ext", _source_add("ext::sh -c touch% /tmp/pwned"), 2, "remote helper"),
    Case("source-add-fd", _source_add("fd::17"), 2, "remote helper"),
    Case("source-add-x-y", _source_add("x::y"), 2, "remote helper"),
    Case("source-add-bad-include", lambda ctx: _source_add(
        str(_make_up(ctx)), "--include", "**/[z-a]")(ctx), 2, "invalid include pattern"),
    # check --staged: what plain git is about to commit
    Case("staged-top-env", _staged({".env": "TOKEN=1\n"}), 2, "problem"),
    Case("staged-top-key", _staged({"deploy.txt": KEY}), 2, "problem"),
    Case("staged-top-link", _staged({}, link="passwd"), 2, "problem"),
    Case("staged-zwnj-item", _staged({"skills/x/SKILL.md": skill_md("x"),
                                      f"skills/x/.g{ZWNJ}it/c": "x"}), 2, "problem"),
    Case("staged-zwnj-top", _staged({f".gi{ZWNJ}t/config": "x"}), 2, "problem"),
    Case("staged-top-gitmodules", _staged({".gitmodules": "[submodule \"x\"]\n"}), 2, "problem"),
    Case("staged-case-collision", _staged({"Skills/x/SKILL.md": skill_md("x"),
                                           "skills/x/SKILL.md": skill_md("x")}), 2, "problem"),
    Case("staged-tools-evil-name", _staged({"tools.yaml": "tools:\n  Evil/../x:\n    recipe: "
                                            "recipes/x\n    digest: sha256:" + "a" * 64}),
         2, "problem"),
    Case("check-skills-linked", _linked_top("skills", "check"), 2, "problem"),
    Case("check-sources-linked", _linked_top("sources", "check"), 2, "problem"),
    # run through a hostile tools.yaml or local state
    Case("run-evil-tool-name", _committed_tools("Evil/../x"), 2, "tool name"),
    Case("run-recipe-outside", _committed_tools("count", recipe="recipes/../../x"), 2,
         "recipes/<name>"),
    Case("run-bad-digest", _committed_tools("count", digest="sha256:zz"), 2, "digest"),
    Case("run-runs-linked", _state_link_run("runs"), 2, "runs"),
    Case("run-usage-linked", _state_link_run("usage.jsonl"), 2, "usage.jsonl"),
    # the lock
    Case("lock-zero-digest-check", _locked(_zero_digest), 2, "problem"),
    Case("lock-zero-digest-update", _locked(_zero_digest, "update"), 2, "all zeros"),
    Case("lock-item-path-dotdot", _locked(lambda t: t.replace("skills/ok:", "../ok:")), 2,
         "problem"),
    Case("lock-bad-commit", _locked(lambda t: _replace_commit(t, "HEAD~1")), 2, "problem"),
    Case("lock-bomb", _locked(lambda t: t + "x:\n" + "".join(
        "  " + line for line in LAUGHS.splitlines(True))), 2, "problem"),
    # the journal: untrusted input
    Case("journal-tx-escape", _journal(tx="../../../../victim"), 2, "not written by librarian"),
    Case("journal-path-escape", _journal(paths=["../victim2"]), 2, "not written by librarian"),
    Case("journal-path-dotgit", _journal(paths=[".git/config"]), 2, "not written by librarian"),
    Case("journal-branch", _journal(branch="refs/heads/../../x"), 2, "not written by librarian"),
    Case("journal-new", _journal(new="HEAD"), 2, "not written by librarian"),
    Case("journal-list", _journal(whole=["tx"]), 2, "not written by librarian"),
    Case("recover-forged", _recover_forged, 2, "not written by librarian"),
]


# A hostile upstream item is skipped, by update's rule (docs/sources.md): the update
# succeeds for the rest, names the item and the reason, and never installs the content.
# Content git itself accepts (measured: `git fsck --strict` of an upstream holding each
# exits 0) but librarian does not admit: the item is skipped, the rest installed.
UPSTREAM_CASES = [
    ("update-case-collision",
     lambda up: up.put("skills/ok/Notes.md", b"a").put("skills/ok/notes.md", b"b"), "one name"),
    ("update-bomb", lambda up: up.put(
        "skills/ok/SKILL.md", f"---\nname: ok\ndescription: D.\n{LAUGHS}---\n".encode()),
     "aliases"),
    ("update-aws-secret", lambda up: up.put(
        "skills/ok/c.ini", f"aws_secret_access_key={SECRET}\n".encode()), "AWS secret"),
    ("update-windows-name", lambda up: up.put("skills/ok/aux.md", b"x"), "reserved"),
]


@pytest.mark.parametrize(("change", "mentions"), [c[1:] for c in UPSTREAM_CASES],
                         ids=[c[0] for c in UPSTREAM_CASES])
def test_hostile_upstream_content_is_never_installed(
        change: Callable[[Upstream], object], mentions: str, library: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    ctx = Ctx(library, tmp_path / "src", tmp_path / "outside", tmp_path)
    args = _update_with(change)(ctx)
    result = run_main(capsys, "--library", str(library), *args)
    assert result.code == 0, result.err
    assert "skipped" in result.out and mentions in result.out, result.out
    listing = git(library, "ls-tree", "-r", "--name-only", "-z", "HEAD").stdout.decode()
    assert not any("git~1" in path or ZWNJ in path or "notes.md" in path
                   or "c.ini" in path or "aux" in path for path in listing.split("\0"))
    # Everything in the object store, the fetched upstream objects included, is clean for
    # git, and so is a clone (which checks every object it receives).
    fsck = git(library, "fsck", "--strict", "--no-dangling", check=False)
    assert fsck.returncode == 0, fsck.stderr.decode()
    clone = git(tmp_path, "-c", "transfer.fsckObjects=true", "clone", "-q", "--no-local",
                str(library), str(tmp_path / "clone"), check=False)
    assert clone.returncode == 0, clone.stderr.decode()


# Paths git itself refuses (`git fsck --strict` of an upstream holding each fails with
# hasDotgit): the whole fetch is refused, as a clone with fsck checks or a checkout would
# refuse the repository; nothing is kept (tests/git/test_quarantine.py has every spelling).
REFUSED_UPSTREAM_CASES = [
    ("update-git~1-in-item", lambda up: up.put("skills/ok/git~1/x", b"x"),
     "upstream holds skills/ok/git~1, a path git refuses (fsck hasDotgit)"),
    ("update-zwnj-upstream-dir", lambda up: up.skill(f"skills/.g{ZWNJ}it/evil", name="evil"),
     "upstream holds skills/.g\\u200cit, a path git refuses (fsck hasDotgit)"),
]


@pytest.mark.parametrize(("change", "mentions"), [c[1:] for c in REFUSED_UPSTREAM_CASES],
                         ids=[c[0] for c in REFUSED_UPSTREAM_CASES])
def test_an_upstream_git_refuses_is_refused_whole(
        change: Callable[[Upstream], object], mentions: str, library: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    ctx = Ctx(library, tmp_path / "src", tmp_path / "outside", tmp_path)
    args = _update_with(change)(ctx)
    before = library_state(library)
    result = run_main(capsys, "--library", str(library), *args)
    assert result.code == 2, result.out
    line = assert_one_error_line(result.err)
    assert f"source team: {mentions}; nothing was fetched" in line, line
    assert library_state(library) == before
    fsck = git(library, "fsck", "--strict", "--no-dangling", check=False)
    assert fsck.returncode == 0, fsck.stderr.decode()


def _make_up(ctx: Ctx) -> Path:
    up = Upstream(ctx.tmp / "up2")
    up.skill("skills/ok").commit("first")
    return up.path


def _replace_commit(text: str, value: str) -> str:
    return re.sub(r"commit: [0-9a-f]+", f"commit: {value}", text)


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 60
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_hostile_input(case: Case, library: Path, tmp_path: Path,
                       capsys: pytest.CaptureFixture[str]) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    write(outside / "precious.txt", "mine\n")
    ctx = Ctx(library, tmp_path / "src", outside, tmp_path)
    ctx.src.mkdir()
    args = case.setup(ctx)
    before, outside_before = library_state(library), tree_snapshot(outside)

    result = run_main(capsys, "--library", str(library), *args)

    assert result.code == case.code, (result.code, result.err, result.out[-400:])
    line = assert_one_error_line(result.err)
    assert case.mentions in line, line
    assert library_state(library) == before
    assert tree_snapshot(outside) == outside_before
