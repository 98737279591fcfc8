"""The envelope every published event carries (re-exported from :mod:`eventstore.envelope`).

Services map their stored events to contracts in their own ``publishing.py`` with
:func:`envelope`; it lives in ``eventstore`` so that the event store's own public events (inbox
rejections) are built the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eventstore.envelope import EVENT_ID_NAMESPACE, Envelope, envelope

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from contracts.base import Event

__all__ = ["EVENT_ID_NAMESPACE", "ContractMap", "Envelope", "envelope"]


@dataclass(frozen=True, slots=True)
class ContractMap:
    """A service's stored events made public, by event class: called with a stored event, the
    public contract event of its class's mapper (its envelope included), or None for a class
    that has none (it stays private). A service's ``publishing.py`` builds one as its
    ``to_contract``, the outbox relay's mapping."""

    mappers: Mapping[type[Any], Callable[[Any], Event]]

    def __call__(self, domain_event: Any) -> Event | None:
        mapper = self.mappers.get(type(domain_event))
        return mapper(domain_event) if mapper is not None else None
