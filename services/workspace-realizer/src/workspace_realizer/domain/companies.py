"""The realizer's copy of a company (fed by the gateway's ``company.created.v1`` and
``company.host_access_changed.v1``): its issue prefix, the counter that numbers its issues
(``ACME-12``), and what of the host an admin let it use (docs/design/isolation.md)."""

from __future__ import annotations

from typing import Final
from uuid import UUID, uuid5

from eventsourcing.domain import event

from eventstore import ClipyardAggregate

__all__ = ["CompanyCopy"]

_NAMESPACE: Final = UUID("0d9d3c1e-3f4b-5a61-9b8e-2c6f1a7e4d21")


class CompanyCopy(ClipyardAggregate):
    """A company as the realizer knows it: prefix, name, the last issue number used, and its
    host access (``host_trusted``, ``allowed_roots``)."""

    host_trusted: bool = False
    allowed_roots: tuple[str, ...] = ()

    @staticmethod
    def create_id(company_id: str) -> UUID:
        """One copy per company: a UUID5 of the gateway's company id."""
        return uuid5(_NAMESPACE, company_id)

    @event("Registered")
    def __init__(self, *, company_id: str, name: str, issue_prefix: str) -> None:
        self.company_id = company_id
        self.name = name
        self.issue_prefix = issue_prefix
        self.issue_counter = 0

    def next_identifier(self) -> str:
        """Allocate the next issue number; return the identifier (``ACME-13``)."""
        self._number_allocated(number=self.issue_counter + 1)
        return f"{self.issue_prefix}-{self.issue_counter}"

    def note_identifier(self, identifier: str) -> None:
        """Claim an explicitly given identifier, keeping the counter above it when it has this
        company's prefix. Always an event: two replicas claiming identifiers of one company at
        once conflict on this copy's version, so one is refused, never both saved."""
        prefix, _, number = identifier.rpartition("-")
        if prefix == self.issue_prefix and number.isdigit() and int(number) > self.issue_counter:
            self._number_allocated(number=int(number))
        else:
            self._identifier_claimed(identifier=identifier)

    @event("IssueNumberAllocated")
    def _number_allocated(self, number: int) -> None:
        self.issue_counter = number

    def note_host_access(self, *, host_trusted: bool, allowed_roots: list[str]) -> None:
        """Keep what an admin let the company use of the host."""
        self._host_access_noted(host_trusted=host_trusted, allowed_roots=list(allowed_roots))

    @event("IdentifierClaimed")
    def _identifier_claimed(self, identifier: str) -> None:
        """An explicit identifier that leaves the counter as it is (a lower number, another
        prefix): recorded for the version it takes."""

    @event("HostAccessNoted")
    def _host_access_noted(self, *, host_trusted: bool, allowed_roots: list[str]) -> None:
        self.host_trusted = host_trusted
        self.allowed_roots = tuple(allowed_roots)
