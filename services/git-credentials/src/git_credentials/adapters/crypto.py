"""Envelope encryption of secret values: AES-256-GCM under per-version data keys.

Each version of a secret gets its own random 32-byte data key. The value is sealed with it
(random 12-byte nonce; the associated data binds the company, the secret id and the version, so
a ciphertext moved to another secret or version does not open). The data key itself is wrapped
with AES-256-GCM by the master key (associated data: the secret id and the version) and kept in
the key vault; the wrapped key carries the master key's id (:func:`master_key_id`) so that a
master-key rotation knows which rows to rewrap.

Sealed values and wrapped keys are ``nonce || ciphertext || tag`` as bytes. Nothing here logs,
and no exception message ever holds a key, a value or a ciphertext.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = [
    "KEY_BYTES",
    "NONCE_BYTES",
    "DecryptionError",
    "KeyRing",
    "MasterKey",
    "master_key_id",
    "new_data_key",
    "open_value",
    "seal_value",
    "unwrap_data_key",
    "wrap_data_key",
]

KEY_BYTES: Final = 32
"""AES-256: master keys and data keys are 32 bytes."""
NONCE_BYTES: Final = 12
"""The GCM nonce (random for every encryption)."""

_VALUE_PURPOSE: Final = b"clipyard/secret-value/v1\x00"
_KEY_PURPOSE: Final = b"clipyard/data-key/v1\x00"


class DecryptionError(Exception):
    """A ciphertext or wrapped key did not open: wrong key, wrong binding, or tampered bytes."""


def master_key_id(key: bytes) -> str:
    """The id of a master key: the first 16 hex digits of its SHA-256 (not secret).

    Args:
        key: The master key.

    Returns:
        16 lower-case hex digits.
    """
    return hashlib.sha256(key).hexdigest()[:16]


class MasterKey:
    """A master key and its id; ``repr`` shows the id only."""

    __slots__ = ("id", "key")

    def __init__(self, key: bytes) -> None:
        """Wrap the key bytes.

        Args:
            key: 32 bytes.

        Raises:
            ValueError: Not 32 bytes.
        """
        if len(key) != KEY_BYTES:
            raise ValueError(f"a master key is {KEY_BYTES} bytes, not {len(key)}")
        self.key = bytes(key)
        self.id = master_key_id(self.key)

    def __repr__(self) -> str:
        return f"MasterKey(id={self.id!r})"


@dataclass(frozen=True)
class KeyRing:
    """The current master key (wraps every new data key) and older ones (only to rewrap)."""

    current: MasterKey
    previous: tuple[MasterKey, ...] = ()

    def find(self, key_id: str) -> MasterKey | None:
        """The master key with this id, current or previous (None: not one of ours).

        Args:
            key_id: A master key id (:func:`master_key_id`).

        Returns:
            The key, or None.
        """
        for key in (self.current, *self.previous):
            if key.id == key_id:
                return key
        return None


def new_data_key() -> bytes:
    """A fresh random data key (32 bytes from the OS's CSPRNG)."""
    return AESGCM.generate_key(bit_length=KEY_BYTES * 8)


def _binding(purpose: bytes, *parts: str | int) -> bytes:
    return purpose + json.dumps(list(parts), separators=(",", ":")).encode("utf-8")


def _seal(key: bytes, plaintext: bytes, aad: bytes) -> bytes:
    nonce = os.urandom(NONCE_BYTES)
    return nonce + AESGCM(key).encrypt(nonce, plaintext, aad)


def _open(key: bytes, sealed: bytes, aad: bytes, what: str) -> bytes:
    if len(sealed) < NONCE_BYTES + 16:
        raise DecryptionError(f"the {what} is too short to be AES-GCM output")
    try:
        return AESGCM(key).decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], aad)
    except InvalidTag:
        raise DecryptionError(
            f"the {what} does not open with this key (wrong key, or not this secret's version)"
        ) from None


def seal_value(
    data_key: bytes, value: str, *, company_id: str, secret_id: str, version: int
) -> bytes:
    """Encrypt a secret value under its version's data key.

    Args:
        data_key: The version's data key.
        value: The clear value.
        company_id: The owning company (bound as associated data).
        secret_id: The secret (bound).
        version: The version (bound).

    Returns:
        ``nonce || ciphertext || tag``.
    """
    aad = _binding(_VALUE_PURPOSE, company_id, secret_id, version)
    return _seal(data_key, value.encode("utf-8"), aad)


def open_value(
    data_key: bytes, sealed: bytes, *, company_id: str, secret_id: str, version: int
) -> str:
    """Decrypt a value sealed by :func:`seal_value` with the same bindings.

    Raises:
        DecryptionError: Wrong key, other bindings, or tampered bytes.
    """
    aad = _binding(_VALUE_PURPOSE, company_id, secret_id, version)
    try:
        return _open(data_key, sealed, aad, "secret value").decode("utf-8")
    except UnicodeDecodeError:
        raise DecryptionError("the secret value is not UTF-8 text") from None


def wrap_data_key(master: MasterKey, data_key: bytes, *, secret_id: str, version: int) -> bytes:
    """Encrypt a data key under a master key (bound to the secret id and version).

    Returns:
        ``nonce || wrapped key || tag`` (60 bytes).
    """
    return _seal(master.key, data_key, _binding(_KEY_PURPOSE, secret_id, version))


def unwrap_data_key(master: MasterKey, wrapped: bytes, *, secret_id: str, version: int) -> bytes:
    """Decrypt a data key wrapped by :func:`wrap_data_key`.

    Raises:
        DecryptionError: Wrong master key, other bindings, or tampered bytes.
    """
    key = _open(master.key, wrapped, _binding(_KEY_PURPOSE, secret_id, version), "data key")
    if len(key) != KEY_BYTES:
        raise DecryptionError("the unwrapped data key has the wrong length")
    return key
