"""Sealing secret values: a fresh data key per version, wrapped into the vault.

:class:`SecretSealer` joins the master keys (:class:`~git_credentials.adapters.crypto.KeyRing`) and the key
vault: ``seal`` creates a version's data key, stores it wrapped and returns the ciphertext (the
only thing the event store keeps); ``open`` reverses it; ``destroy`` forgets every key of a secret;
``rewrap`` moves rows wrapped by an older master key to the current one.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import TYPE_CHECKING

from git_credentials.adapters.crypto import (
    DecryptionError,
    new_data_key,
    open_value,
    seal_value,
    unwrap_data_key,
    wrap_data_key,
)
from git_credentials.adapters.vault import WrappedKey

if TYPE_CHECKING:
    from git_credentials.adapters.crypto import KeyRing
    from git_credentials.adapters.vault import KeyVault

__all__ = ["RewrapReport", "SecretSealer", "UnsealError"]


class UnsealError(Exception):
    """A stored ciphertext cannot be opened: its data key is gone, is wrapped by a master key
    this service does not have, or does not open. Never holds key or value material."""


@dataclass(frozen=True)
class RewrapReport:
    """What a start-time rewrap did (counts only)."""

    rewrapped: int
    """Rows moved from an older master key (``CLIPYARD_SECRET_KEY_PREVIOUS``) to the current one."""
    unreadable: int
    """Rows wrapped by a master key the service was not given: their secrets are unavailable."""


class SecretSealer:
    """Seals and opens secret values with per-version data keys kept in ``vault``."""

    def __init__(self, vault: KeyVault, keys: KeyRing) -> None:
        """Bind the vault and the master keys."""
        self.vault = vault
        self.keys = keys

    def seal(self, value: str, *, company_id: str, secret_id: str, version: int) -> str:
        """Encrypt ``value`` under a new data key, store the key wrapped, return the ciphertext.

        Returns:
            ``nonce || ciphertext || tag`` in base64 (what the stored event holds).
        """
        data_key = new_data_key()
        sealed = seal_value(
            data_key, value, company_id=company_id, secret_id=secret_id, version=version
        )
        master = self.keys.current
        wrapped = wrap_data_key(master, data_key, secret_id=secret_id, version=version)
        self.vault.put(WrappedKey(secret_id, version, master.id, wrapped))
        return base64.b64encode(sealed).decode("ascii")

    def open(self, ciphertext: str, *, company_id: str, secret_id: str, version: int) -> str:
        """Decrypt one version's stored ciphertext.

        Raises:
            UnsealError: Saying why (no key, unknown master key, does not open), never showing
                key or value material.
        """
        row = self.vault.get(secret_id, version)
        if row is None:
            raise UnsealError(f"version {version} of secret {secret_id} has no data key")
        master = self.keys.find(row.master_key_id)
        if master is None:
            raise UnsealError(
                f"the data key of version {version} of secret {secret_id} is wrapped by master "
                f"key {row.master_key_id}, which this service was not given "
                "(CLIPYARD_SECRET_KEY, CLIPYARD_SECRET_KEY_PREVIOUS)"
            )
        try:
            data_key = unwrap_data_key(master, row.wrapped, secret_id=secret_id, version=version)
            sealed = base64.b64decode(ciphertext, validate=True)
            return open_value(
                data_key, sealed, company_id=company_id, secret_id=secret_id, version=version
            )
        except (DecryptionError, binascii.Error) as error:
            raise UnsealError(
                f"version {version} of secret {secret_id} does not decrypt: {error}"
            ) from None

    def destroy(self, secret_id: str) -> int:
        """Destroy the data keys of every version of a secret; return how many went."""
        return self.vault.destroy(secret_id)

    def rewrap(self, *, dry_run: bool = False) -> RewrapReport:
        """Rewrap every vault row wrapped by an older master key with the current one (with
        ``dry_run``, change nothing: only count the rows it could and could not rewrap)."""
        current = self.keys.current
        unreadable = 0
        readable = 0

        def rewrap_one(row: WrappedKey) -> WrappedKey | None:
            nonlocal unreadable, readable
            master = self.keys.find(row.master_key_id)
            try:
                if master is None:
                    raise DecryptionError("unknown master key")
                data_key = unwrap_data_key(
                    master, row.wrapped, secret_id=row.secret_id, version=row.version
                )
            except DecryptionError:
                unreadable += 1
                return None
            readable += 1
            if dry_run:
                return None
            wrapped = wrap_data_key(current, data_key, secret_id=row.secret_id, version=row.version)
            return WrappedKey(row.secret_id, row.version, current.id, wrapped)

        rewrapped = self.vault.rewrap(current.id, rewrap_one)
        return RewrapReport(rewrapped=readable if dry_run else rewrapped, unreadable=unreadable)
