"""The base ``eventsourcing`` application of every service: process recorder, snapshots, read models.

- The library's *process* recorder (a ``Tracking`` saved with events is honoured), from a
  Clipyard factory: it also holds the store's leases and checks fenced writes
  (:mod:`eventstore.recorders`, :attr:`ServiceApplication.lease_table`).
- Snapshots every ``snapshot_interval`` versions (:mod:`eventstore.snapshots`).
- In-memory read models: created in :meth:`~ServiceApplication.init_read_models`, updated in
  :meth:`~ServiceApplication.project` (every stored event, in notification order), shown by
  :meth:`~ServiceApplication.read_models`; rebuilt from the log at construction and kept current
  after each save and by :meth:`~ServiceApplication.follow_store` (what other instances saved,
  driven by :class:`eventstore.follower.StoreFollower`). Each notification is projected once, in
  id order, under one lock and one high-water mark (``projected_upto``).
- ``on_saved`` callbacks (the outbox relay's wake-up) run with the last notification id after each
  save and each followed batch; ``on_followed`` ones get the followed events.
- ``publication_check`` (the outbox relay's) runs on every pending event before anything is
  recorded: an event that could never be published fails the save with a clear error.
- The settings come only from the ``env`` given (never from ``os.environ``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast
from uuid import UUID

from eventsourcing.application import Application, ProcessingEvent
from eventsourcing.persistence import ApplicationRecorder, ProcessRecorder, Recording, Tracking
from eventsourcing.utils import Environment, EnvType

from eventstore.settings import (
    FACTORY_TOPICS,
    StoreSettings,
    ensure_postgres_schema,
    eventsourcing_env,
)
from eventstore.snapshots import take_due_snapshots

if TYPE_CHECKING:
    from eventsourcing.domain import DomainEventProtocol, MutableOrImmutableAggregate

    from eventstore.leases import LeaseTable

__all__ = ["ServiceApplication", "build_application"]

logger = logging.getLogger(__name__)

TApp = TypeVar("TApp", bound="ServiceApplication")


class ServiceApplication(Application[UUID]):
    """Base application of a Clipyard service (one per service; its replicas share its store)."""

    name = "store"
    """Names the PostgreSQL tables (``store_events``, ...) whatever the subclass is called."""
    is_snapshotting_enabled = True
    snapshot_interval: ClassVar[int] = 100
    """Take a snapshot of any aggregate every this many versions (0: never, unless
    ``snapshotting_intervals`` names the aggregate class)."""
    projection_batch_size: ClassVar[int] = 500
    """Notifications read per query while rebuilding read models."""

    recorder: ProcessRecorder

    def __init_subclass__(cls, **kwargs: Any) -> None:
        named = "name" in cls.__dict__
        super().__init_subclass__(**kwargs)
        if not named:
            cls.name = ServiceApplication.name

    def __init__(self, env: EnvType | None = None, *, service: str | None = None) -> None:
        """Open the store and rebuild the read models from its notification log.

        Args:
            env: The ``eventsourcing`` settings (see :func:`eventstore.eventsourcing_env`);
                in-memory storage when None.
            service: The service token (``realizer``), for logs and reports.
        """
        self.service = service
        self.on_saved: list[Callable[[int], None]] = []
        self.on_followed: list[Callable[[list[DomainEventProtocol[UUID]]], None]] = []
        """Called (store thread) with the events :meth:`follow_store` projected."""
        self.publication_check: Callable[[DomainEventProtocol[UUID]], None] | None = None
        """Raises for a pending event that could never be published; nothing is saved then."""
        self.projected_upto = 0
        self.notifications_projected = 0
        self.notifications_followed = 0
        """Notifications other instances (replicas) saved, projected from the log."""
        self.projection_failures = 0
        self.rebuild_duration_ms = 0.0
        self._projection_lock = threading.RLock()
        super().__init__(env)
        self.rebuild_read_models()

    # -- configuration -------------------------------------------------------------------------

    def now(self) -> datetime:
        """The current time (UTC): one place, so that a test may pin it."""
        return datetime.now(UTC)

    def construct_env(self, name: str, env: EnvType | None = None) -> Environment:
        """Build the library's settings from the class defaults and ``env`` only."""
        settings = dict(type(self).env)
        if type(self).is_snapshotting_enabled or type(self).snapshotting_intervals:
            settings["IS_SNAPSHOTTING_ENABLED"] = "y"
        if env is not None:
            settings.update(env)
        module = settings.get("PERSISTENCE_MODULE") or "eventsourcing.popo"
        settings["PERSISTENCE_MODULE"] = FACTORY_TOPICS.get(module, module)
        return Environment(name, settings)

    def construct_recorder(self) -> ProcessRecorder:
        """Use the process recorder, which records tracking atomically with events."""
        return self.factory.process_recorder()

    @property
    def lease_table(self) -> LeaseTable:
        """The store's leases (:mod:`eventstore.leases`), held by its recorder."""
        if not hasattr(self.recorder, "acquire_lease"):
            msg = f"{type(self.recorder).__name__} holds no leases: open the store with a Clipyard factory"
            raise TypeError(msg)
        return cast("LeaseTable", self.recorder)

    # -- read models (subclasses override) -----------------------------------------------------

    def init_read_models(self) -> None:
        """Create empty read models (called before every rebuild)."""

    def project(self, domain_event: DomainEventProtocol[UUID]) -> None:
        """Apply one stored event to the read models (in notification order)."""

    def read_models(self) -> dict[str, object]:
        """The read models as plain data, comparable between two instances."""
        return {}

    # -- projection ----------------------------------------------------------------------------

    def rebuild_read_models(self, source: ApplicationRecorder | None = None) -> int:
        """Reset the read models and project every stored event again.

        Args:
            source: The recorder to read (default: this application's own).

        Returns:
            How many notifications were projected.
        """
        with self._projection_lock:
            started = time.perf_counter()
            self.init_read_models()
            self.projected_upto = 0
            self.notifications_projected = 0
            self.projection_failures = 0
            count = self._catch_up(source or self.recorder)
            self.rebuild_duration_ms = (time.perf_counter() - started) * 1000
            if self.projection_failures:
                logger.warning(
                    "read models rebuilt with projection failures",
                    extra={
                        "service": self.service,
                        "projection_failures": self.projection_failures,
                        "notifications_projected": self.notifications_projected,
                    },
                )
            return count

    def catch_up(self) -> int:
        """Project stored events the read models have not seen yet (normally none).

        Returns:
            How many notifications were projected.
        """
        with self._projection_lock:
            return self._catch_up(self.recorder)

    def follow_store(self, limit: int | None = None) -> int:
        """Project the next notifications of the store that this instance has not projected.

        Other instances (replicas on the same store) save too; this reads at most ``limit``
        notifications after ``projected_upto`` and projects them in id order, under the saves'
        lock: never twice (only ids above ``projected_upto``), never skipped (ids commit in
        order: ``LOCK TABLE`` on PostgreSQL, SQLite's one writer; a gap is an id never
        committed). Then ``on_saved`` and ``on_followed`` callbacks run.

        Args:
            limit: Notifications to read at most (default :attr:`projection_batch_size`).

        Returns:
            How many were projected (``limit`` of them: more may be waiting).
        """
        with self._projection_lock:
            notifications = self.recorder.select_notifications(
                start=self.projected_upto,
                limit=limit or self.projection_batch_size,
                inclusive_of_start=False,
            )
            followed = []
            for notification in notifications:
                try:
                    domain_event = self.mapper.to_domain_event(notification)
                except Exception:  # one this build cannot read (a newer replica's): passed over
                    self._project_one(None, notification.id, topic=notification.topic)
                else:
                    self._project_one(domain_event, notification.id)
                    followed.append(domain_event)
            self.notifications_followed += len(notifications)
        if notifications:  # what other instances saved: the leader's relay publishes it
            self._saved(notifications[-1].id)
            for callback in list(self.on_followed):
                try:
                    callback(followed)
                except Exception:
                    logger.exception("on_followed callback failed", extra={"service": self.service})
        return len(notifications)

    def _catch_up(self, recorder: ApplicationRecorder) -> int:
        count = 0
        while True:
            notifications = recorder.select_notifications(
                start=self.projected_upto,
                limit=self.projection_batch_size,
                inclusive_of_start=False,
            )
            if not notifications:
                return count
            for notification in notifications:
                self._project_one(self.mapper.to_domain_event(notification), notification.id)
                count += 1

    def _project_one(
        self, domain_event: DomainEventProtocol[UUID] | None, notification_id: int, topic: str = ""
    ) -> None:
        """Project one event (None: its stored ``topic`` could not be read), counting a failure."""
        try:
            if domain_event is None:
                raise LookupError(f"stored event {topic!r} cannot be read by this build")
            self.project(domain_event)
        except Exception:
            self.projection_failures += 1
            logger.exception(
                "read-model projection failed",
                extra={
                    "service": self.service,
                    "notification_id": notification_id,
                    "event_type": topic or type(domain_event).__qualname__,
                    "projection_failures": self.projection_failures,
                },
            )
        self.projected_upto = notification_id
        self.notifications_projected += 1

    def _notify(self, recordings: list[Recording[UUID]]) -> None:
        super()._notify(recordings)
        if not recordings:
            return
        with self._projection_lock:
            fresh = [r for r in recordings if r.notification.id > self.projected_upto]
            if fresh and fresh[0].notification.id == self.projected_upto + 1:
                for recording in fresh:
                    self._project_one(recording.domain_event, recording.notification.id)
            elif fresh:
                # A gap: another instance saved in between (or a PostgreSQL sequence skipped the
                # ids of a rolled-back save). Read the log, theirs then ours in id order, up to
                # our last (what others save after it is the follower's).
                last_own = fresh[-1].notification.id
                while self.projected_upto < last_own and self.follow_store():
                    continue
                self.notifications_followed -= len(fresh)  # ours, met in the log
        self._saved(recordings[-1].notification.id)

    def _saved(self, last: int) -> None:
        for callback in list(self.on_saved):
            try:
                callback(last)
            except Exception:
                logger.exception("on_saved callback failed", extra={"service": self.service})

    # -- saving --------------------------------------------------------------------------------

    def save_with_tracking(
        self,
        *objs: MutableOrImmutableAggregate[UUID] | DomainEventProtocol[UUID] | None,
        tracking: Tracking,
    ) -> list[Recording[UUID]]:
        """Save the pending events of ``objs`` and ``tracking`` in one transaction.

        With no events, only the position is recorded. Tracking is a high-water mark per
        upstream: a position not above the recorded one fails the whole save.

        Args:
            *objs: Aggregates (their pending events) or events.
            tracking: The upstream position these events react to.

        Returns:
            The recordings of the saved events.

        Raises:
            eventsourcing.persistence.IntegrityError: A version conflict, or the position was
                already recorded; nothing was saved.
        """
        processing_event = ProcessingEvent[UUID](tracking=tracking)
        processing_event.collect_events(*objs)
        recordings = self._record(processing_event)
        self._take_snapshots(processing_event)
        self._notify(recordings)
        return recordings

    def _record(self, processing_event: ProcessingEvent[UUID]) -> list[Recording[UUID]]:
        """Check every pending event with ``publication_check`` (if any), then record them all."""
        check = self.publication_check
        if check is not None:
            for domain_event in processing_event.events:
                check(domain_event)
        return super()._record(processing_event)

    def _take_snapshots(self, processing_event: ProcessingEvent[UUID]) -> None:
        take_due_snapshots(self, processing_event)

    def has_processed(self, upstream: str, notification_id: int) -> bool:
        """True if a position at or beyond ``notification_id`` of ``upstream`` is recorded."""
        return self.recorder.has_tracking_id(upstream, notification_id)

    def position(self, upstream: str) -> int | None:
        """The last recorded position of ``upstream`` (None when nothing was recorded)."""
        return self.recorder.max_tracking_id(upstream)

    def last_notification_id(self) -> int:
        """The highest notification id in the store (0 when empty)."""
        return self.recorder.max_notification_id() or 0


def build_application(cls: type[TApp], *, service: str, settings: StoreSettings) -> TApp:
    """Open a service's store and build its application (read models rebuilt).

    For PostgreSQL the service's schema is created first. Subclasses' ``__init__`` must accept
    ``env`` and ``service`` keyword arguments.

    Args:
        cls: The application class.
        service: The service token (``realizer``): names the SQLite file or PostgreSQL schema.
        settings: Where the store lives.

    Returns:
        The application.
    """
    if settings.kind == "postgres":
        ensure_postgres_schema(settings, service)
    return cls(env=eventsourcing_env(settings, service), service=service)
