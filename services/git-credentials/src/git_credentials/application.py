"""The git-credentials' eventsourcing application: its use cases (on the store's thread).

Order of the two writes, so that a crash between them never leaves a recoverable secret:

- creating or rotating: the data key goes into the vault first, then the ciphertext is saved (a
  crash in between leaves a key nothing refers to; the next rotation of that version replaces it);
- deleting: the deletion is saved first, then the data keys are destroyed; at start
  (:meth:`GitCredentialsApplication.open_vault`) the keys of every secret recorded as deleted that
  are still in the vault are destroyed.

The read models (``readmodels.py``) are rebuilt from the store without the vault, so a replay
needs no key; only the use cases that seal or open a value need :meth:`open_vault` first.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from uuid import UUID, uuid4

from contracts.credentials import CredentialSource, GitProvider
from eventstore import current_cause
from git_credentials.domain import (
    CredentialResolution,
    Secret,
    SecretNameTakenError,
    SecretNotFoundError,
    VaultError,
    check_secret_name,
)
from git_credentials.readmodels import AccessRecord, CredentialsReadModels, SecretRecord
from git_credentials.resolution.chain import SecretUnavailable
from git_credentials.sealing import UnsealError

if TYPE_CHECKING:
    from git_credentials.sealing import SecretSealer

__all__ = [
    "GitCredentialsApplication",
    "ResolutionFacts",
    "VaultStart",
]

log = logging.getLogger(__name__)


class ResolutionFacts(Protocol):
    """What :meth:`GitCredentialsApplication.record_resolution` reads of a resolution (as
    ``git_credentials.resolution.ResolutionRecord`` has it)."""

    @property
    def company_id(self) -> str: ...
    @property
    def secret_name(self) -> str | None: ...
    @property
    def source(self) -> CredentialSource: ...
    @property
    def provider(self) -> GitProvider: ...
    @property
    def remote_host(self) -> str: ...
    @property
    def run_id(self) -> str | None: ...
    @property
    def operation_id(self) -> str | None: ...


@dataclass(frozen=True)
class VaultStart:
    """What opening the vault did at start (counts only, never a key)."""

    rewrapped: int
    """Data keys moved from an older master key to the current one."""
    unreadable: int
    """Data keys wrapped by a master key this service was not given."""
    shredded: int
    """Data keys of deleted secrets that were still in the vault, now destroyed."""


class GitCredentialsApplication(CredentialsReadModels):
    """Company secrets (ciphertext only) and credential resolutions; the only writer of the
    git-credentials' store."""

    sealer: SecretSealer | None = None
    """Set by :meth:`open_vault`; None in a replay's fresh instance (which needs no key)."""

    # -- start -----------------------------------------------------------------------------

    def open_vault(self, sealer: SecretSealer) -> VaultStart:
        """Use ``sealer``; rewrap rows of older master keys; destroy keys of deleted secrets."""
        self.sealer = sealer
        report = sealer.rewrap()
        shredded = sum(
            sealer.destroy(secret_id)
            for secret_id in sorted(self.deleted_secrets & sealer.vault.secret_ids())
        )
        start = VaultStart(report.rewrapped, report.unreadable, shredded)
        log.info(
            "key vault open",
            extra={"rewrapped": start.rewrapped, "shredded": start.shredded},
        )
        if start.unreadable:
            log.warning(
                "some data keys are wrapped by a master key this service was not given; their "
                "secrets are unavailable until CLIPYARD_SECRET_KEY or "
                "CLIPYARD_SECRET_KEY_PREVIOUS holds it",
                extra={"unreadable": start.unreadable},
            )
        return start

    def _sealing(self) -> SecretSealer:
        if self.sealer is None:
            raise VaultError("The key vault is not open yet; retry in a moment.")
        return self.sealer

    # -- secrets ---------------------------------------------------------------------------

    def create_secret(self, company_id: str, name: str, value: str) -> SecretRecord:
        """Create a secret (version 1): its data key into the vault, then its ciphertext saved."""
        self._check_name_free(company_id, check_secret_name(name))
        secret_id = uuid4()
        sealed = self._sealing().seal(
            value, company_id=company_id, secret_id=str(secret_id), version=1
        )
        try:
            self.save(
                Secret.create(
                    secret_id=secret_id, company_id=company_id, name=name, ciphertext=sealed
                )
            )
        except BaseException:
            self._sealing().destroy(str(secret_id))  # nothing refers to that key
            raise
        return self.secrets[str(secret_id)]

    def rotate_secret(self, secret_id: str, value: str, *, scope: str | None) -> SecretRecord:
        """Store ``value`` as the secret's next version (``scope``: the principal's company;
        None lets an admin reach any)."""
        record = self.secret_in(scope, secret_id)
        secret: Secret = self.repository.get(UUID(record.id))
        version = secret.next_version
        secret.rotate(
            version,
            self._sealing().seal(
                value, company_id=record.company_id, secret_id=record.id, version=version
            ),
        )
        self.save(secret)
        return self.secrets[record.id]

    def delete_secret(self, secret_id: str, *, scope: str | None) -> int:
        """Delete a secret (saved first), then destroy the data keys of all its versions.

        Returns:
            How many data keys were destroyed.
        """
        record = self.secret_in(scope, secret_id)
        secret: Secret = self.repository.get(UUID(record.id))
        secret.delete()
        self.save(secret)
        try:
            return self._sealing().destroy(record.id)
        except Exception:
            log.exception(
                "destroying a deleted secret's data keys failed", extra={"secret_id": record.id}
            )
            raise VaultError(
                "The secret is deleted, but the key vault failed while destroying its data keys; "
                "they are destroyed at the service's next start.",
                secretId=record.id,
            ) from None

    def secret_in(self, scope: str | None, secret_id: str) -> SecretRecord:
        """The live secret ``secret_id`` of company ``scope`` (None: any company).

        Raises:
            SecretNotFoundError: None such (deleted, unknown, or another company's).
        """
        record = self.secrets.get(secret_id)
        if record is None or (scope is not None and record.company_id != scope):
            raise SecretNotFoundError(f"There is no secret {secret_id}.", secretId=secret_id)
        return record

    def list_secrets(
        self, company_id: str, limit: int, offset: int
    ) -> tuple[list[SecretRecord], int]:
        """A page of a company's live secrets by name, and the total."""
        rows = sorted(
            (r for r in self.secrets.values() if r.company_id == company_id),
            key=lambda r: (r.name, r.id),
        )
        return rows[offset : offset + limit], len(rows)

    def secret_value(self, company_id: str, name: str) -> str | None:
        """The latest value of the company's live secret ``name`` (exact name), decrypted.

        Returns:
            The value, or None when the company has no live secret of that name.

        Raises:
            SecretUnavailable: It exists but cannot be decrypted (never shows key or value).
        """
        key = self.secret_names.get((company_id, name))
        if key is None:
            return None
        secret: Secret = self.repository.get(UUID(key))
        try:
            return self._sealing().open(
                secret.ciphertext_of(secret.latest),
                company_id=company_id,
                secret_id=key,
                version=secret.latest,
            )
        except (UnsealError, VaultError) as error:
            raise SecretUnavailable(f"The secret {name} cannot be decrypted: {error}") from None

    def _check_name_free(self, company_id: str, name: str) -> None:
        taken = self.secret_names.get((company_id, name))
        if taken is not None:
            raise SecretNameTakenError(
                f"This company already has a secret named {name}; rotate it with "
                f"PUT /api/secrets/{taken} instead.",
                secretId=taken,
                name=name,
            )

    # -- credential resolutions ------------------------------------------------------------

    def record_resolution(self, record: ResolutionFacts) -> AccessRecord:
        """Save one resolution (its run: ``record.run_id``, else the current cause's)."""
        cause = current_cause()
        run_id = record.run_id
        if run_id is None and cause is not None:
            run_id = cause.run_id
        resolution = CredentialResolution(
            company_id=record.company_id,
            secret_name=record.secret_name,
            source=record.source,
            provider=record.provider,
            remote_host=record.remote_host,
            operation_id=record.operation_id,
            run_id=run_id,
        )
        self.save(resolution)
        return self.access_log[record.company_id][-1]

    def access_events(
        self, company_id: str, limit: int, offset: int
    ) -> tuple[list[AccessRecord], int]:
        """A page of a company's access events, newest first, and the total."""
        rows = self.access_log.get(company_id, [])
        newest_first = rows[::-1]
        return newest_first[offset : offset + limit], len(rows)
