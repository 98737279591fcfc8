"""The git-credentials' eventsourcing application: company secrets (ciphertext only) and
credential resolutions, composed from the use cases of :mod:`git_credentials.usecases` over the
read models of :mod:`git_credentials.readmodels`. Everything runs on the store's thread.

The read models are rebuilt from the store without the vault, so a replay needs no key; only the
use cases that seal or open a value need :meth:`~GitCredentialsApplication.open_vault` first.
"""

from __future__ import annotations

from git_credentials.usecases.resolutions import ResolutionFacts, ResolutionUseCases
from git_credentials.usecases.secrets import SecretUseCases
from git_credentials.usecases.vault import VaultStart

__all__ = [
    "GitCredentialsApplication",
    "ResolutionFacts",
    "VaultStart",
]


class GitCredentialsApplication(SecretUseCases, ResolutionUseCases):
    """Company secrets (ciphertext only) and credential resolutions; the only writer of the
    git-credentials' store."""
