"""Signed releases (spec §7): OpenSSH ed25519 keys, SSHSIG signatures, the release
statement, and the signed annotated tag that carries it.

This package owns the cryptography and the byte layouts: key files and public-key lines
(``keys``), the SSHSIG wire and armor format of OpenSSH's PROTOCOL.sshsig (``sshsig``),
the YAML release statement (``statement``), the tag object as ``git tag -s`` writes it
with ``gpg.format=ssh`` (``tag``), and the rules a release must pass before a subscriber
installs it (``policy``). It works on bytes and values only: it never touches a git
repository, a library or the network (the store and the update own those).

It may import the standard library, ``cryptography``, ``librarian.errors`` and
``librarian.formats.yamlio`` (the safe YAML loader); nothing else of librarian.
"""
