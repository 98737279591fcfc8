"""The envelope every published event carries, built from a stored domain event.

Services map their stored events to contracts in their own ``publishing.py``; this builds the
envelope part (ARCHITECTURE §2) the same way for all of them, the shared ``operation`` and
``inbox`` events included. The ``eventId`` is derived from the stored event's identity, so a
republished event keeps its id.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Final, TypedDict

from contracts.base import Actor

__all__ = ["EVENT_ID_NAMESPACE", "Envelope", "envelope", "event_id"]


class Envelope(TypedDict):
    """The envelope fields of a contract event (ARCHITECTURE §2), by their keyword names, to be
    passed on with ``**`` to the contract event's constructor."""

    event_id: str
    aggregate: str
    aggregate_id: str
    aggregate_version: int
    company_id: str | None
    occurred_at: datetime
    actor: Actor
    run_id: str | None
    reason: str | None


EVENT_ID_NAMESPACE: Final = uuid.UUID("8f1c9a52-6b0e-4f5e-9d1d-5c1e0a7b3c11")
"""uuid5 namespace of published event ids."""


def event_id(domain_event: Any) -> str:
    """The public ``eventId`` of a stored event: a uuid5 of ``<aggregate id>:<version>``.

    Args:
        domain_event: A stored event.

    Returns:
        The id, the same every time the event is published.
    """
    origin = f"{domain_event.originator_id}:{domain_event.originator_version}"
    return str(uuid.uuid5(EVENT_ID_NAMESPACE, origin))


def envelope(
    domain_event: Any, *, aggregate: str, company_id: str | None, service: str
) -> Envelope:
    """The envelope fields of a contract event, as keyword arguments.

    Args:
        domain_event: A stored event of a ``ClipyardAggregate``.
        aggregate: The aggregate token (``company``, ``operation``, ``inbox``).
        company_id: The company the event belongs to (None for system-wide facts).
        service: The publishing service's name, the actor when no cause was recorded.

    Returns:
        ``event_id``, ``aggregate``, ``aggregate_id``, ``aggregate_version``, ``company_id``,
        ``occurred_at``, ``actor``, ``run_id`` and ``reason``.
    """
    actor = domain_event.actor or {"type": "system", "id": service}
    return {
        "event_id": event_id(domain_event),
        "aggregate": aggregate,
        "aggregate_id": str(domain_event.originator_id),
        "aggregate_version": domain_event.originator_version,
        "company_id": company_id,
        "occurred_at": domain_event.timestamp,
        "actor": Actor(type=actor["type"], id=actor["id"]),
        "run_id": domain_event.run_id,
        "reason": domain_event.reason,
    }
