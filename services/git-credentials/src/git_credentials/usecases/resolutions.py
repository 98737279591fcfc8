"""The use cases of credential resolutions: recording one (the audit of ARCHITECTURE §1) and a
company's access events."""

from __future__ import annotations

from typing import Protocol

from contracts.credentials import CredentialSource, GitProvider
from eventstore import current_cause
from git_credentials.domain import CredentialResolution
from git_credentials.readmodels import AccessRecord, CredentialsReadModels

__all__ = ["ResolutionFacts", "ResolutionUseCases"]


class ResolutionFacts(Protocol):
    """What :meth:`GitCredentialsApplication.record_resolution` reads of a resolution (as
    ``git_credentials.usecases.resolver.ResolutionRecord`` has it)."""

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


class ResolutionUseCases(CredentialsReadModels):
    """Credential resolutions: each saved once, listed newest first."""

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
