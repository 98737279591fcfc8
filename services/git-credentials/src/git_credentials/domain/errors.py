"""The git-credentials' errors: each a ``CodedError`` whose ``code``/``status``/``details`` become
the error reply (ARCHITECTURE §2)."""

from __future__ import annotations

from contracts.errors import DetailedError, ErrorCode

__all__ = [
    "GitCredentialsError",
    "InvalidSecretError",
    "SecretNameTakenError",
    "SecretNotFoundError",
    "VaultError",
]


class GitCredentialsError(DetailedError):
    """Base of every error the git-credentials raises on purpose; ``code``/``status``/``details``
    become the error reply (ARCHITECTURE §2)."""

    code = ErrorCode.STATE_CONFLICT


class SecretNotFoundError(GitCredentialsError):
    """No such secret, a deleted one, or one of another company (existence is not revealed)."""

    code = ErrorCode.NOT_FOUND


class SecretNameTakenError(GitCredentialsError):
    """The company already has a live secret of that name."""


class InvalidSecretError(GitCredentialsError):
    """A name or value the contracts would have refused (checked again here)."""

    code = ErrorCode.VALIDATION_FAILED


class VaultError(GitCredentialsError):
    """The key vault failed (the message says what was done and what will happen)."""

    code = ErrorCode.SERVICE_UNAVAILABLE


class VaultKeyMismatchError(RuntimeError):
    """At start: this replica's master keys do not open rows of the vault other replicas use."""

    def __init__(self, unreadable: int) -> None:
        super().__init__(
            f"git-credentials refuses to start: {unreadable} data keys of the vault are wrapped "
            "by a master key this replica was not given, while other replicas run; give every "
            "replica the same CLIPYARD_SECRET_KEY (and CLIPYARD_SECRET_KEY_PREVIOUS while "
            "rotating)"
        )
        self.unreadable = unreadable
