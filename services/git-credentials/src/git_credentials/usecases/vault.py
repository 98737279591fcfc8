"""Opening the key vault at start, and the sealer every use case that seals or opens a value
goes through.

At start (:meth:`VaultUseCases.open_vault`) the rows wrapped by an older master key are rewrapped
and the keys of every secret recorded as deleted that are still in the vault are destroyed (a
crash between a delete's save and its keys' destruction leaves them there).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from git_credentials.domain import VaultError
from git_credentials.readmodels import CredentialsReadModels

if TYPE_CHECKING:
    from git_credentials.adapters.sealing import RewrapReport, SecretSealer

__all__ = ["VaultStart", "VaultUseCases"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VaultStart:
    """What opening the vault did at start (counts only, never a key)."""

    rewrapped: int
    """Data keys moved from an older master key to the current one."""
    unreadable: int
    """Data keys wrapped by a master key this service was not given."""
    shredded: int
    """Data keys of deleted secrets that were still in the vault, now destroyed."""


class VaultUseCases(CredentialsReadModels):
    """The vault's opening and the sealer of the other use cases."""

    sealer: SecretSealer | None = None
    """Set by :meth:`open_vault`; None in a replay's fresh instance (which needs no key)."""

    def open_vault(self, sealer: SecretSealer, *, seen: RewrapReport | None = None) -> VaultStart:
        """Use ``sealer``; rewrap rows of older master keys (unless the caller already looked
        without changing anything, ``seen``: other replicas run); destroy keys of deleted
        secrets."""
        self.sealer = sealer
        rewrap = seen is None
        report = sealer.rewrap() if seen is None else seen
        shredded = sum(
            sealer.destroy(secret_id)
            for secret_id in sorted(self.deleted_secrets & sealer.vault.secret_ids())
        )
        start = VaultStart(report.rewrapped if rewrap else 0, report.unreadable, shredded)
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
