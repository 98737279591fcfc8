"""The use cases of company secrets: create, rotate, delete, and the queries (one secret, a page,
the latest value decrypted).

Order of the two writes, so that a crash between them never leaves a recoverable secret:

- creating or rotating: the data key goes into the vault first, then the ciphertext is saved (a
  crash in between leaves a key nothing refers to; the next rotation of that version replaces it);
- deleting: the deletion is saved first, then the data keys are destroyed; at start
  (:meth:`~git_credentials.usecases.vault.VaultUseCases.open_vault`) the keys of every secret
  recorded as deleted that are still in the vault are destroyed.
"""

from __future__ import annotations

import logging
from uuid import UUID, uuid4

from git_credentials.adapters.sealing import UnsealError
from git_credentials.domain import (
    Secret,
    SecretNameTakenError,
    SecretNotFoundError,
    VaultError,
    check_secret_name,
)
from git_credentials.domain.chain import SecretUnavailable
from git_credentials.readmodels import SecretRecord
from git_credentials.usecases.vault import VaultUseCases

__all__ = ["SecretUseCases"]

log = logging.getLogger(__name__)


class SecretUseCases(VaultUseCases):
    """Company secrets: the value goes into the vault-sealed ciphertext, never out but to a
    resolution (:meth:`secret_value`)."""

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
