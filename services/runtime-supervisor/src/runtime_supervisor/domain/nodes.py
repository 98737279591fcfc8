"""Worker nodes (docs/scale-out.md, "Worker nodes"): one record per ``CLIPYARD_NODE_ID``, written by the node's
own supervisor each time it starts (``Started``: which instance, which version, and what the host
can hold). Whether the node answers now is not stored: the supervisors ask it on the bus."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID, uuid5

from eventsourcing.domain import event

from eventstore import ClipyardAggregate

__all__ = ["WorkerNode", "node_uuid"]

_NAMESPACE = UUID("5b0e6f3c-8d21-5a47-9c3e-2f7a1d6b8e90")


def node_uuid(node_id: str) -> UUID:
    """The record's id: one per node id."""
    return uuid5(_NAMESPACE, node_id)


class WorkerNode(ClipyardAggregate):
    """A host under one node id: its last start and capacity."""

    @staticmethod
    def create_id(node_id: str) -> UUID:
        """One record per node id."""
        return node_uuid(node_id)

    @event("Registered")
    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self.instance = ""
        self.release = ""
        """The supervisor's version (``version`` is the aggregate's own)."""
        self.started_at: datetime | None = None
        self.capacity: dict[str, object] = {}
        self.starts = 0
        self.draining = False
        self.drain_reason: str | None = None

    def start(
        self, *, instance: str, release: str, at: datetime, capacity: dict[str, object]
    ) -> None:
        """Its supervisor ``instance`` (version ``release``) started on it at ``at``."""
        self._started(instance=instance, release=release, at=at, capacity=dict(capacity))

    @event("Started")
    def _started(
        self, instance: str, release: str, at: datetime, capacity: dict[str, object]
    ) -> None:
        self.instance, self.release, self.started_at = instance, release, at
        self.capacity = capacity
        self.starts += 1

    def drain(self, reason: str | None) -> None:
        """Mark it draining: no new project workspace is placed on it (docs/scale-out.md,
        "Draining a node"). Already draining: nothing changes."""
        if not self.draining:
            # ``why`` (the operator's words, kept on the record); the event's own ``reason`` is
            # its cause's, as on every event.
            self._drain_started(why=reason)

    @event("DrainStarted")
    def _drain_started(self, why: str | None) -> None:
        self.draining, self.drain_reason = True, why

    def undrain(self) -> None:
        """Take it back for new placements. Not draining: nothing changes."""
        if self.draining:
            self._drain_ended()

    @event("DrainEnded")
    def _drain_ended(self) -> None:
        self.draining, self.drain_reason = False, None
