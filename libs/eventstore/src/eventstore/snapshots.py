"""Snapshots taken after a save: every ``snapshot_interval`` versions of any aggregate."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from eventsourcing.application import project_aggregate

if TYPE_CHECKING:
    from uuid import UUID

    from eventsourcing.application import ProcessingEvent

    from eventstore.application import ServiceApplication

__all__ = ["take_due_snapshots"]

logger = logging.getLogger(__name__)


def take_due_snapshots(app: ServiceApplication, processing_event: ProcessingEvent[UUID]) -> None:
    """Snapshot each aggregate of ``processing_event`` whose new version is a multiple of its
    interval (``snapshotting_intervals`` for its class, else ``snapshot_interval``; 0: never).
    A failed snapshot is logged and never fails the save: loading stays correct, only slower."""
    if app.snapshots is None:
        return
    for domain_event in processing_event.events:
        aggregate = processing_event.aggregates.get(domain_event.originator_id)
        if aggregate is None:
            continue
        aggregate_class = type(aggregate)
        interval = app.snapshotting_intervals.get(aggregate_class, app.snapshot_interval)
        if not interval or domain_event.originator_version % interval:
            continue
        try:
            app.take_snapshot(
                domain_event.originator_id,
                version=domain_event.originator_version,
                projector_func=app.snapshotting_projectors.get(aggregate_class, project_aggregate),
            )
        except Exception:
            logger.warning(
                "snapshot failed (the events are saved; loading stays correct, only slower)",
                exc_info=True,
                extra={"service": app.service, "aggregate_id": str(aggregate.id)},
            )
