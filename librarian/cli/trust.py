"""Commands for signed releases (spec §7): ``key generate|public``, ``release``, ``verify``.

Registered on the typer app by the command table in ``cli.main``. Each command parses,
calls one library function and prints through ``render.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from librarian.cli.app import JsonOpt, State, app, current_library, emit

key_app = typer.Typer(no_args_is_help=True, help="OpenSSH ed25519 signing keys.")
app.add_typer(key_app, name="key")


@key_app.command("generate")
def key_generate(
    path: Path,
    comment: Annotated[str | None, typer.Option(
        "--comment", help="The public key's comment (default: user@host).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write PATH (OpenSSH private key, mode 0600) and PATH.pub."""
    from librarian.trust.keys import generate_key

    key = generate_key(path, comment)
    emit({"kind": "key", "path": str(path), "public_path": f"{path}.pub",
          "public": key.public.line(), "fingerprint": key.public.fingerprint}, as_json,
         f"wrote {path} (private, mode 0600) and {path}.pub\n"
         f"{key.public.line()}\nfingerprint {key.public.fingerprint}")


@key_app.command("public")
def key_public(path: Path, as_json: JsonOpt = False) -> None:
    """Print the public-key line of a key file (private key or .pub)."""
    from librarian.trust.keys import public_key_of

    key = public_key_of(path)
    emit({"kind": "key", "path": str(path), "public": key.line(),
          "fingerprint": key.fingerprint}, as_json, key.line())


@app.command()
def release(
    key: Annotated[Path, typer.Option("--key", help="The ed25519 private key to sign with.")],
    expires: Annotated[int, typer.Option(
        "--expires", help="Days until the release expires (freeze protection).")] = 90,
    as_json: JsonOpt = False,
) -> None:
    """Sign HEAD as the next release: the tag librarian-release/<N>."""
    from librarian.cli.render import receipt_text
    from librarian.ops.publish import find_publisher
    from librarian.ops.publish import release as make_release

    receipt = make_release(find_publisher(State.library or Path.cwd()), key,
                           expires_days=expires)
    emit(receipt, as_json, receipt_text(receipt) + f"\n  {receipt.items} items, signed by "
         f"{receipt.key}, expires {receipt.expires}\n  publish it: {receipt.publish}")


@app.command()
def verify(
    sources: Annotated[list[str] | None, typer.Argument(help="Sources (default: all).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Re-check, offline, each signed source against its locked release."""
    from librarian.cli.app import jsonable
    from librarian.cli.render_sources import verify_text
    from librarian.sources.releases import verify_sources

    report = verify_sources(current_library(), sources or ())
    emit({"kind": "verify", **jsonable(report)}, as_json, verify_text(report))
