"""Domain of the git-credentials: aggregates, past-tense events and errors (pure, no I/O).

- :class:`Secret`: a company secret. Its stored events hold the **ciphertext** of each version,
  never a value; the data keys that open them live in the key vault (``adapters/vault.py``), so deleting
  the secret and destroying its keys leaves nothing that can be decrypted.
- :class:`CredentialResolution`: one credential resolution (the audit of ARCHITECTURE §1: which
  secret or the server environment, for which run or operation, for which host; never a value).

The two aggregates are defined here, in the package's own module, because their stored events'
topics name it (``git_credentials.domain:Secret.Created``): moving them would leave the events
already stored unreadable. Next to them: the errors (:mod:`.errors`), and the pure rules of a
credential resolution: which remotes get one (:mod:`.hosts`), the chain of secret names
(:mod:`.chain`) and how one git process authenticates (:mod:`.invocation`).
"""

from __future__ import annotations

import re
from typing import Final
from uuid import UUID

from eventsourcing.domain import event

from contracts.credentials import CredentialSource, GitProvider
from eventstore import ClipyardAggregate
from git_credentials.domain.errors import (
    GitCredentialsError,
    InvalidSecretError,
    SecretNameTakenError,
    SecretNotFoundError,
    VaultError,
    VaultKeyMismatchError,
)

__all__ = [
    "CredentialResolution",
    "GitCredentialsError",
    "InvalidSecretError",
    "Secret",
    "SecretNameTakenError",
    "SecretNotFoundError",
    "VaultError",
    "VaultKeyMismatchError",
    "check_secret_name",
]

SECRET_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
"""The names a secret may have (as ``contracts.credentials.SecretName``)."""


def check_secret_name(name: str) -> str:
    """Return ``name`` when it is a valid secret name.

    Raises:
        InvalidSecretError: Naming the rule.
    """
    if not SECRET_NAME.fullmatch(name):
        raise InvalidSecretError(
            "A secret name is letters, digits and underscores, not starting with a digit "
            "(at most 128), like GITHUB_TOKEN.",
            field="name",
        )
    return name


class Secret(ClipyardAggregate):
    """A company secret: its name and the ciphertext of every version (newest last)."""

    class Created(ClipyardAggregate.Created):
        """The secret was created with its first version (public: ``secret.created.v1``)."""

        company_id: str
        name: str
        ciphertext: str

    class Rotated(ClipyardAggregate.Event):
        """A new version was stored (public: ``secret.rotated.v1``, without the ciphertext)."""

        company_id: str
        name: str
        version: int
        ciphertext: str

    class Deleted(ClipyardAggregate.Event):
        """The secret was deleted; its data keys are destroyed (public: ``secret.deleted.v1``)."""

        company_id: str
        name: str
        versions_destroyed: int

    @classmethod
    def create(cls, *, secret_id: UUID, company_id: str, name: str, ciphertext: str) -> Secret:
        """A new secret whose first version was sealed for ``secret_id`` already.

        Raises:
            InvalidSecretError: The name is not a secret name.
        """
        check_secret_name(name)
        return cls._create(
            cls.Created, id=secret_id, company_id=company_id, name=name, ciphertext=ciphertext
        )

    @event(Created)
    def __init__(self, *, company_id: str, name: str, ciphertext: str) -> None:
        self.company_id = company_id
        self.name = name
        self.ciphertexts: list[str] = [ciphertext]
        self.deleted = False

    @property
    def latest(self) -> int:
        """The newest version's number (1 for a new secret)."""
        return len(self.ciphertexts)

    @property
    def next_version(self) -> int:
        """The number the next rotation gets."""
        return self.latest + 1

    def ciphertext_of(self, version: int) -> str:
        """The stored ciphertext of ``version`` (1-based)."""
        return self.ciphertexts[version - 1]

    def rotate(self, version: int, ciphertext: str) -> None:
        """Store the next version, sealed for ``version`` already.

        Raises:
            SecretNotFoundError: The secret is deleted.
            ValueError: ``version`` is not the next one (a bug of the caller).
        """
        if self.deleted:
            raise SecretNotFoundError(f"There is no secret {self.id}.", secretId=str(self.id))
        if version != self.next_version:
            raise ValueError(f"version {version} is not the next one ({self.next_version})")
        self._rotated(
            company_id=self.company_id, name=self.name, version=version, ciphertext=ciphertext
        )

    @event(Rotated)
    def _rotated(self, company_id: str, name: str, version: int, ciphertext: str) -> None:
        self.ciphertexts = [*self.ciphertexts, ciphertext]

    def delete(self) -> None:
        """Delete the secret (every version); the application destroys the data keys next.

        Raises:
            SecretNotFoundError: It was deleted already.
        """
        if self.deleted:
            raise SecretNotFoundError(f"There is no secret {self.id}.", secretId=str(self.id))
        self._deleted(company_id=self.company_id, name=self.name, versions_destroyed=self.latest)

    @event(Deleted)
    def _deleted(self, company_id: str, name: str, versions_destroyed: int) -> None:
        self.ciphertexts = []
        self.deleted = True


class CredentialResolution(ClipyardAggregate):
    """One resolution of a git credential: what resolved, for whom, for which host."""

    event_aggregate = "credential"

    class Resolved(ClipyardAggregate.Created):
        """A credential was resolved (public: ``credential.resolved.v1``); ``run_id`` is the
        run it was resolved for (the envelope's ``runId``)."""

        company_id: str
        secret_name: str | None
        source: CredentialSource
        provider: GitProvider
        remote_host: str
        operation_id: str | None

    @event(Resolved)
    def __init__(
        self,
        *,
        company_id: str,
        secret_name: str | None,
        source: CredentialSource,
        provider: GitProvider,
        remote_host: str,
        operation_id: str | None,
        run_id: str | None,
    ) -> None:
        self.company_id = company_id
        self.secret_name = secret_name
        self.source = source
        self.provider = provider
        self.remote_host = remote_host
        self.operation_id = operation_id
        self.run_id = run_id
