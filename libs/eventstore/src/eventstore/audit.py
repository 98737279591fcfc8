"""The stored history of one aggregate, as operators see it (``ws.qry.<service>.audit``).

Private fields never leave the service (ARCHITECTURE §2): every row goes through the
application's privacy policy (:mod:`eventstore.privacy`), after its ``audit_view`` hook if it has
one. Each row is named by its public type and label (:mod:`eventstore.event_names`), its stored
class kept aside as ``stored_type``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

import msgspec

from contracts.service import AuditTrail, StoredEvent
from eventstore.aggregate import ENVELOPE_FIELDS
from eventstore.event_names import event_label, public_type, stored_type
from eventstore.privacy import PrivacyPolicy, privacy_of

if TYPE_CHECKING:
    from eventsourcing.domain import DomainEventProtocol

    from eventstore.application import ServiceApplication
    from eventstore.relay import ToContract

__all__ = ["audit_trail", "stored_event_view"]


def _plain(value: Any) -> Any:
    return msgspec.to_builtins(value, enc_hook=str, order="deterministic")


def _timestamp(domain_event: Any) -> datetime:
    timestamp = getattr(domain_event, "timestamp", None)
    return timestamp if isinstance(timestamp, datetime) else datetime.fromtimestamp(0, UTC)


def stored_event_view(
    domain_event: DomainEventProtocol[UUID],
    privacy: PrivacyPolicy | None = None,
    to_contract: ToContract | None = None,
) -> StoredEvent:
    """One stored event as an audit row: its type and label, its cause, its own data.

    Args:
        domain_event: A stored domain event.
        privacy: Which fields are private (the defaults when None).
        to_contract: The service's mapping to public events: a published event is shown with
            its public type (else, and without it, the type derived from its class).

    Returns:
        The row; ``data`` is the event's state without the envelope and cause fields and without
        private fields (``*_hash``, ``ciphertext``, ``*_secret*``, ``key``, ``token``, ...).
    """
    policy = privacy or PrivacyPolicy()
    state = vars(domain_event)
    data = {
        key: value
        for key, value in state.items()
        if key not in ENVELOPE_FIELDS and not policy.is_private(key)
    }
    actor = getattr(domain_event, "actor", None)
    event_type = public_type(domain_event, to_contract)
    return StoredEvent(
        aggregate_id=str(domain_event.originator_id),
        aggregate_version=domain_event.originator_version,
        type=event_type,
        label=event_label(event_type),
        stored_type=stored_type(domain_event),
        occurred_at=_timestamp(domain_event),
        actor=_plain(actor) if actor is not None else None,
        run_id=getattr(domain_event, "run_id", None),
        reason=getattr(domain_event, "reason", None),
        data=policy.drop_private(_plain(data)),
    )


def _row(
    app: ServiceApplication,
    policy: PrivacyPolicy,
    domain_event: Any,
    to_contract: ToContract | None,
) -> StoredEvent:
    """The application's own view of an event (``audit_view``), private fields dropped."""
    view = getattr(app, "audit_view", None)
    if view is None:
        return stored_event_view(domain_event, policy, to_contract)
    row: StoredEvent = view(domain_event)
    return msgspec.structs.replace(
        row,
        label=row.label or event_label(row.type),
        stored_type=row.stored_type or stored_type(domain_event),
        data=policy.drop_private(_plain(row.data)),
    )


def audit_trail(
    app: ServiceApplication,
    aggregate_id: str | UUID,
    limit: int = 1000,
    offset: int = 0,
    to_contract: ToContract | None = None,
) -> AuditTrail:
    """Read the stored history of one aggregate, oldest first.

    Args:
        app: The service's application.
        aggregate_id: The aggregate's id (a UUID, or its string form).
        limit: At most this many events.
        offset: Skip this many of the oldest events.
        to_contract: The service's mapping to public events (see :func:`stored_event_view`).

    Returns:
        The trail; ``total`` is 0 when the store holds no such aggregate (or the id is not a UUID).
        Rows come from ``app.audit_view(event)`` when the application defines it, else
        :func:`stored_event_view`; either way the application's private fields are dropped.
    """
    service = app.service or app.name
    policy = privacy_of(app)
    try:
        originator_id = aggregate_id if isinstance(aggregate_id, UUID) else UUID(aggregate_id)
    except ValueError:
        return AuditTrail(
            service=service, aggregate_id=str(aggregate_id), aggregate_type=None, total=0, events=[]
        )
    last = list(app.events.get(originator_id, desc=True, limit=1))
    if not last:
        return AuditTrail(
            service=service,
            aggregate_id=str(originator_id),
            aggregate_type=None,
            total=0,
            events=[],
        )
    first = next(iter(app.events.get(originator_id, limit=1)))
    topic = getattr(first, "originator_topic", None)
    aggregate_type = topic.rpartition(":")[2] if isinstance(topic, str) else None
    page = (
        app.events.get(originator_id, gt=max(offset, 0), limit=max(limit, 0)) if limit > 0 else []
    )
    return AuditTrail(
        service=service,
        aggregate_id=str(originator_id),
        aggregate_type=aggregate_type,
        total=last[0].originator_version,
        events=[_row(app, policy, e, to_contract) for e in page],
    )
