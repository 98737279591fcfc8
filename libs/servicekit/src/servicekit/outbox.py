"""What a service's outbox publishes: its own public events, and the shared ones every service
stores (operations, inbox rejections)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from eventstore.rejections import rejection_to_contract
from servicekit.operations import operation_to_contract

if TYPE_CHECKING:
    from contracts.base import Event

__all__ = ["published_contract"]


def published_contract(
    name: str, own: Callable[[object], Event | None]
) -> Callable[[object], Event | None]:
    """The relay's mapping of stored events to contracts for service ``name``.

    Args:
        name: The service's name (``workspace-realizer``).
        own: The service's mapping of its own events (its ``publishing.to_contract``).

    Returns:
        The mapping: an operation's or an inbox rejection's contract, else ``own``'s.
    """

    def to_contract(domain_event: object) -> Event | None:
        shared = operation_to_contract(domain_event, service=name)
        if shared is None:
            shared = rejection_to_contract(domain_event, name)
        return shared if shared is not None else own(domain_event)

    return to_contract
