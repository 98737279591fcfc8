"""AES-256-GCM envelope encryption: values under data keys, data keys under the master key."""

from __future__ import annotations

import hashlib
import os
from typing import Any

import pytest

from git_credentials.adapters.crypto import (
    DecryptionError,
    KeyRing,
    MasterKey,
    master_key_id,
    new_data_key,
    open_value,
    seal_value,
    unwrap_data_key,
    wrap_data_key,
)

BIND: dict[str, Any] = {"company_id": "c-1", "secret_id": "s-1", "version": 1}


def test_a_sealed_value_opens_only_with_its_key_and_bindings() -> None:
    key = new_data_key()
    sealed = seal_value(key, "ghp_canary", **BIND)
    # Round trip with the same key and bindings.
    assert open_value(key, sealed, **BIND) == "ghp_canary"
    # Nonce (12 bytes) + ciphertext + 16-byte tag; the value is not in it.
    assert len(sealed) == 12 + len("ghp_canary") + 16
    assert b"ghp_canary" not in sealed
    # Another key, company, secret or version: it does not open.
    with pytest.raises(DecryptionError):
        open_value(new_data_key(), sealed, **BIND)
    for other in ({"company_id": "c-2"}, {"secret_id": "s-2"}, {"version": 2}):
        with pytest.raises(DecryptionError):
            open_value(key, sealed, **{**BIND, **other})  # type: ignore[arg-type]
    # One flipped bit anywhere: refused.
    for index in (0, 12, len(sealed) - 1):
        tampered = bytearray(sealed)
        tampered[index] ^= 1
        with pytest.raises(DecryptionError):
            open_value(key, bytes(tampered), **BIND)
    # Truncated input is refused with a clear error, not an exception from the library.
    with pytest.raises(DecryptionError, match="too short"):
        open_value(key, sealed[:20], **BIND)


def test_every_seal_uses_a_fresh_nonce_and_every_data_key_is_random() -> None:
    key = new_data_key()
    first, second = (seal_value(key, "same", **BIND) for _ in range(2))
    assert first[:12] != second[:12]
    assert first != second
    keys = {new_data_key() for _ in range(50)}
    assert len(keys) == 50
    assert all(len(k) == 32 for k in keys)


def test_a_wrapped_data_key_opens_only_with_its_master_key_and_version() -> None:
    master = MasterKey(os.urandom(32))
    data_key = new_data_key()
    wrapped = wrap_data_key(master, data_key, secret_id="s-1", version=3)
    assert data_key not in wrapped
    assert unwrap_data_key(master, wrapped, secret_id="s-1", version=3) == data_key
    with pytest.raises(DecryptionError):
        unwrap_data_key(MasterKey(os.urandom(32)), wrapped, secret_id="s-1", version=3)
    with pytest.raises(DecryptionError):
        unwrap_data_key(master, wrapped, secret_id="s-1", version=2)
    with pytest.raises(DecryptionError):
        unwrap_data_key(master, wrapped, secret_id="s-2", version=3)


def test_master_keys_are_named_by_a_digest_prefix_and_never_shown() -> None:
    raw = os.urandom(32)
    master = MasterKey(raw)
    assert master.id == master_key_id(raw) == hashlib.sha256(raw).hexdigest()[:16]
    assert repr(master) == f"MasterKey(id={master.id!r})"
    assert raw.hex() not in repr(master)
    assert str(raw) not in repr(KeyRing(master))
    with pytest.raises(ValueError, match="32 bytes"):
        MasterKey(os.urandom(16))


def test_a_key_ring_finds_current_and_previous_keys_by_id() -> None:
    current, old = MasterKey(os.urandom(32)), MasterKey(os.urandom(32))
    keys = KeyRing(current, (old,))
    assert keys.find(current.id) is current
    assert keys.find(old.id) is old
    assert keys.find(master_key_id(os.urandom(32))) is None
