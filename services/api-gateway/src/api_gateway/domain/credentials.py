"""The gateway's secrets: fresh API keys and session ids, CSRF tokens derived from a session id,
and the SHA-256 hashes that are all the store ever holds of them. Pure: no I/O."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

__all__ = ["csrf_token_of", "hash_secret", "new_key", "new_session_secret"]


def hash_secret(secret: str) -> str:
    """The SHA-256 hex digest of a key, session id or CSRF token: all the store ever holds.

    Args:
        secret: The clear secret.

    Returns:
        64 lower-case hex digits.
    """
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_key(kind: str) -> str:
    """A fresh API key, ``cy_<kind>_<32 random bytes, URL-safe base64>``.

    Args:
        kind: The key kind (``board``, ``agent``).

    Returns:
        The clear key (shown once).
    """
    return f"cy_{kind}_{secrets.token_urlsafe(32)}"


def new_session_secret() -> str:
    """A fresh session id (32 random bytes, URL-safe base64)."""
    return secrets.token_urlsafe(32)


def csrf_token_of(session_id: str) -> str:
    """A session's CSRF token, derived from its (secret, HttpOnly) id: HMAC-SHA256 keyed by the
    session id, URL-safe base64. Whoever can compute it already holds the session, and a page
    server can render it again for any live session (after a gateway restart too) although the
    store keeps only its hash."""
    digest = hmac.new(session_id.encode(), b"clipyard-csrf-v1", hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
