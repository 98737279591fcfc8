"""Poison messages an inbox terminated, recorded as events of a private aggregate per upstream.

Operators see them in the audit trail of :func:`rejections_id` ``(upstream)``; a service that wants
them public maps them with :func:`rejection_to_contract` in its ``to_contract``.
"""

from __future__ import annotations

from typing import Any, Final
from uuid import UUID, uuid5

from eventsourcing.domain import event

from contracts.service import InboxMessageRejected
from eventstore.aggregate import ClipyardAggregate
from eventstore.envelope import envelope

__all__ = ["REJECTIONS_NAMESPACE", "InboxRejections", "rejection_to_contract", "rejections_id"]

REJECTIONS_NAMESPACE: Final = UUID("3f0c7f5e-6a53-4c1e-9f43-0e3b9f6d2a71")
"""Namespace of the deterministic ids of rejection aggregates (their public events' ids come from
:func:`eventstore.envelope.envelope`, like every other published event's)."""


def rejections_id(upstream: str) -> UUID:
    """The id of the aggregate recording messages rejected from ``upstream``.

    Args:
        upstream: The upstream service token.

    Returns:
        A UUID5, the same in every store.
    """
    return uuid5(REJECTIONS_NAMESPACE, f"inbox-rejections:{upstream}")


class InboxRejections(ClipyardAggregate):
    """The poison messages one service's inbox received from one upstream service."""

    event_aggregate = "inbox"

    @staticmethod
    def create_id(upstream: str) -> UUID:
        """Deterministic: one aggregate per upstream."""
        return rejections_id(upstream)

    @event("Opened")
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.rejected = 0

    class MessageRejected(ClipyardAggregate.Event):
        """An upstream message was terminated as poison."""

        upstream: str
        subject: str
        stream_sequence: int
        error: str
        msg_id: str | None
        notification_id: int | None

    @event(MessageRejected)
    def reject(
        self,
        upstream: str,
        subject: str,
        stream_sequence: int,
        error: str,
        msg_id: str | None = None,
        notification_id: int | None = None,
    ) -> None:
        """Record one terminated message."""
        self.rejected += 1


def rejection_to_contract(domain_event: Any, service: str) -> InboxMessageRejected | None:
    """The public ``inbox.message_rejected.v1`` of a stored rejection, else None.

    Args:
        domain_event: A stored domain event of the service.
        service: The service's name (the system actor when the event has none).

    Returns:
        The contract event, or None when ``domain_event`` is not a rejection.
    """
    if not isinstance(domain_event, InboxRejections.MessageRejected):
        return None
    return InboxMessageRejected(
        **envelope(domain_event, aggregate="inbox", company_id=None, service=service),
        upstream=domain_event.upstream,
        subject=domain_event.subject,
        stream_sequence=domain_event.stream_sequence,
        error=domain_event.error,
    )
