"""Helpers of the secrets tests: master keys, applications over a store, raw store reading."""

from __future__ import annotations

import base64
import os
import sqlite3
from pathlib import Path
from typing import Any, NamedTuple

from eventstore import StoreSettings, eventsourcing_env
from git_credentials.adapters.crypto import KeyRing, MasterKey
from git_credentials.adapters.sealing import SecretSealer
from git_credentials.adapters.vault import KeyVault, MemoryVault, SqliteVault, vault_path
from git_credentials.application import GitCredentialsApplication, VaultStart
from git_credentials.domain import Secret

TOKEN = "credentials"
"""The service token: names the SQLite store file ``data/credentials.sqlite``."""


def new_key() -> bytes:
    """A random master key."""
    return os.urandom(32)


def key_text(key: bytes) -> str:
    """A master key as ``CLIPYARD_SECRET_KEY`` holds it."""
    return base64.urlsafe_b64encode(key).decode("ascii")


def ring(current: bytes, *previous: bytes) -> KeyRing:
    """A key ring of raw keys."""
    return KeyRing(MasterKey(current), tuple(MasterKey(k) for k in previous))


def memory_app(keys: KeyRing, vault: KeyVault | None = None) -> GitCredentialsApplication:
    """An application over the in-memory store with its vault open."""
    app = GitCredentialsApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"}, service=TOKEN)
    app.open_vault(SecretSealer(vault if vault is not None else MemoryVault(), keys))
    return app


def sqlite_app(home: Path) -> GitCredentialsApplication:
    """An application over the SQLite store under ``home`` (vault not open: a fresh start)."""
    env = eventsourcing_env(StoreSettings(kind="sqlite", home=home), TOKEN)
    return GitCredentialsApplication(env=env, service=TOKEN)


class Started(NamedTuple):
    """A started application, its vault, and what opening the vault did."""

    app: GitCredentialsApplication
    vault: SqliteVault
    start: VaultStart


def started(home: Path, keys: KeyRing) -> Started:
    """What a start does: the SQLite store and vault under ``home``, the vault opened."""
    app = sqlite_app(home)
    vault = SqliteVault(vault_path(home))
    return Started(app, vault, app.open_vault(SecretSealer(vault, keys)))


def stored_events(app: GitCredentialsApplication) -> list[Any]:
    """Every stored domain event, in order."""
    notifications = app.recorder.select_notifications(start=1, limit=100_000)
    return [app.mapper.to_domain_event(n) for n in notifications]


def stored_ciphertexts(app: GitCredentialsApplication, secret_id: str) -> list[str]:
    """The ciphertexts the store holds for a secret, version 1 first."""
    found = []
    for event in stored_events(app):
        if str(event.originator_id) == secret_id and isinstance(
            event, Secret.Created | Secret.Rotated
        ):
            found.append(event.ciphertext)
    return found


def vault_rows(path: Path) -> list[tuple[str, int, str, bytes]]:
    """The raw rows of an SQLite vault file (read with a connection of its own)."""
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT secret_id, version, master_key_id, wrapped FROM data_keys")
        return [(r[0], r[1], r[2], bytes(r[3])) for r in rows]
    finally:
        db.close()
