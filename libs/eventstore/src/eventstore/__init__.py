"""Event-store wiring for eventsourcing, outbox relay to JetStream, inbox consumers.

See ``docs/platform.md`` (eventstore) for how the parts fit together.
"""

from __future__ import annotations

from eventstore.aggregate import ENVELOPE_FIELDS, METADATA_FIELDS, ClipyardAggregate
from eventstore.application import ServiceApplication, build_application
from eventstore.audit import audit_trail, stored_event_view
from eventstore.cause import Cause, acting, current_cause, system_cause
from eventstore.executor import StoreExecutor
from eventstore.inbox import Inbox, InboxHandler, parse_msg_id
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
from eventstore.settings import StoreKind, StoreSettings, ensure_postgres_schema, eventsourcing_env

__all__ = [
    "ENVELOPE_FIELDS",
    "METADATA_FIELDS",
    "NOTIFICATION_ID_HEADER",
    "ORIGIN_HEADER",
    "OUTBOX_TRACKING",
    "Cause",
    "ClipyardAggregate",
    "Inbox",
    "InboxHandler",
    "InboxRejections",
    "OutboxRelay",
    "RelayRefusedError",
    "ServiceApplication",
    "StoreExecutor",
    "StoreKind",
    "StoreSettings",
    "ToContract",
    "acting",
    "audit_trail",
    "build_application",
    "current_cause",
    "ensure_postgres_schema",
    "eventsourcing_env",
    "parse_msg_id",
    "rejection_to_contract",
    "rejections_id",
    "stored_event_view",
    "system_cause",
    "verify_replay",
]
