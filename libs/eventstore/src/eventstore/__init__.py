"""Event-store wiring for eventsourcing, outbox relay to JetStream, inbox consumers.

See ``docs/design/platform.md`` (eventstore) for how the parts fit together.
"""

from __future__ import annotations

from eventstore.aggregate import (
    ENVELOPE_FIELDS,
    METADATA_FIELDS,
    ClipyardAggregate,
    aggregate_state,
)
from eventstore.application import ServiceApplication, build_application
from eventstore.audit import audit_trail, stored_event_view
from eventstore.cause import Cause, acting, current_cause, system_cause
from eventstore.envelope import EVENT_ID_NAMESPACE, envelope
from eventstore.executor import StoreExecutor
from eventstore.follower import StoreFollower
from eventstore.inbox import Inbox, InboxHandler
from eventstore.msgid import format_msg_id, parse_msg_id, parse_notification_id
from eventstore.publication import (
    EventTooLargeError,
    OutboxSkips,
    UnpublishableEventError,
    skips_id,
)
from eventstore.rejections import InboxRejections, rejection_to_contract, rejections_id
from eventstore.relay import (
    NOTIFICATION_ID_HEADER,
    ORIGIN_HEADER,
    OUTBOX_TRACKING,
    OutboxRelay,
    RelayRefusedError,
    ToContract,
)
from eventstore.replay import verify_replay
from eventstore.scoped import CompanyScoped
from eventstore.settings import StoreKind, StoreSettings, ensure_postgres_schema, eventsourcing_env

__all__ = [
    "ENVELOPE_FIELDS",
    "EVENT_ID_NAMESPACE",
    "METADATA_FIELDS",
    "NOTIFICATION_ID_HEADER",
    "ORIGIN_HEADER",
    "OUTBOX_TRACKING",
    "Cause",
    "ClipyardAggregate",
    "CompanyScoped",
    "EventTooLargeError",
    "Inbox",
    "InboxHandler",
    "InboxRejections",
    "OutboxRelay",
    "OutboxSkips",
    "RelayRefusedError",
    "ServiceApplication",
    "StoreExecutor",
    "StoreFollower",
    "StoreKind",
    "StoreSettings",
    "ToContract",
    "UnpublishableEventError",
    "acting",
    "aggregate_state",
    "audit_trail",
    "build_application",
    "current_cause",
    "ensure_postgres_schema",
    "envelope",
    "eventsourcing_env",
    "format_msg_id",
    "parse_msg_id",
    "parse_notification_id",
    "rejection_to_contract",
    "rejections_id",
    "skips_id",
    "stored_event_view",
    "system_cause",
    "verify_replay",
]
