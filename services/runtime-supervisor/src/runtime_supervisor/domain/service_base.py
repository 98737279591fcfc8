"""The base of runtime service instances' aggregate: each of its events says what it is about
(the instance's target and name at the time), so the published event is built from the stored
one alone."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, TypedDict

from runtime_supervisor.domain.base import CompanyScoped

if TYPE_CHECKING:
    from uuid import UUID

    from eventsourcing.domain import CanMutateAggregate

__all__ = ["AboutStamped", "ServiceAbout"]


class ServiceAbout(TypedDict):
    """What a service instance's stored event is about (its ``about``)."""

    execution_workspace_id: str | None
    project_workspace_id: str | None
    service_name: str
    port: int | None


class AboutStamped(CompanyScoped):
    """A company-owned aggregate whose events carry ``about`` (see the module's docstring)."""

    if TYPE_CHECKING:  # set by the created event; an annotation here would become an event field
        execution_workspace_id: str | None
        project_workspace_id: str | None
        service_name: str
        port: int | None

    class Event(CompanyScoped.Event):
        """Base of a service instance's events."""

        about: ServiceAbout | None = dataclasses.field(default=None, kw_only=True)
        """Its target and name at the time (``execution_workspace_id``,
        ``project_workspace_id``, ``service_name``, ``port``), so the published event is built
        from the stored one alone (the created event carries them as its own fields)."""

    def trigger_event(self, event_class: type[CanMutateAggregate[UUID]], **kwargs: Any) -> None:
        """Trigger an event stamped with what it is about."""
        about: ServiceAbout = {
            "execution_workspace_id": self.execution_workspace_id,
            "project_workspace_id": self.project_workspace_id,
            "service_name": self.service_name,
            "port": self.port,
        }
        kwargs.setdefault("about", about)
        super().trigger_event(event_class, **kwargs)
