"""The base of company-owned aggregates: every event names its company.

Published events carry ``companyId`` in their envelope; a service's mapping to public contracts
sees only the stored event, so each event of a company-owned aggregate records ``tenant_id`` (the
owning company) without every command method having to pass it. Subclassed by the realizer's and
the supervisor's aggregates (their concrete events keep their own topics).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any
from uuid import UUID

from eventstore.aggregate import ClipyardAggregate

if TYPE_CHECKING:
    from typing import Self

    from eventsourcing.domain import CanInitAggregate, CanMutateAggregate

__all__ = ["CompanyScoped"]


class CompanyScoped(ClipyardAggregate):
    """An aggregate owned by one company (``company_id``, set by its created event)."""

    if TYPE_CHECKING:  # set by the created event; an annotation here would become an event field
        company_id: str

    class Event(ClipyardAggregate.Event):
        """Base of the events of company-owned aggregates."""

        tenant_id: str | None = dataclasses.field(default=None, kw_only=True)
        """The owning company (the envelope's ``companyId`` when published)."""

    def trigger_event(self, event_class: type[CanMutateAggregate[UUID]], **kwargs: Any) -> None:
        """Trigger an event stamped with the owning company."""
        kwargs.setdefault("tenant_id", self.company_id)
        super().trigger_event(event_class, **kwargs)

    @classmethod
    def _create(cls, event_class: type[CanInitAggregate[UUID]], **kwargs: Any) -> Self:
        """Create the aggregate; its created event names the company it was given."""
        kwargs.setdefault("tenant_id", kwargs.get("company_id"))
        return super()._create(event_class, **kwargs)
