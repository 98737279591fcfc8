"""Does the event stream hold every public event of every store exactly once?

Each service's SQLite store is read through a fresh instance of its application beside the live
one (SQLite lets both; the instance only reads, though opening it runs the schema's idempotent
``CREATE TABLE IF NOT EXISTS``); every stored event its outbox publishes is expected in
``WS_EVENTS`` under its ``eventId``. The stream is read whole by a pull consumer of the
CLI's user, as ``clipyard events tail`` reads it.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from api_gateway.application import GatewayApplication
from api_gateway.publishing import to_contract as gateway_events
from clipyard_cli.bus import connect_cli, login_from_env
from contracts.subjects import EVENT_STREAM, SERVICE_NAMES
from eventstore.settings import StoreSettings, eventsourcing_env
from git_credentials.application import GitCredentialsApplication
from git_credentials.publishing import to_contract as credentials_events
from heartbeat_controller.application import HeartbeatControllerApplication
from heartbeat_controller.publishing import to_contract as controller_events
from runtime_supervisor.application import RuntimeSupervisorApplication
from runtime_supervisor.publishing import to_contract as supervisor_events
from servicekit.outbox import published_contract
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.publishing import to_contract as realizer_events

__all__ = ["STORES", "public_event_ids", "stream_event_ids"]

STORES: Mapping[str, tuple[type[Any], Callable[[Any], Any]]] = {
    "gateway": (GatewayApplication, gateway_events),
    "realizer": (WorkspaceRealizerApplication, realizer_events),
    "supervisor": (RuntimeSupervisorApplication, supervisor_events),
    "controller": (HeartbeatControllerApplication, controller_events),
    "credentials": (GitCredentialsApplication, credentials_events),
}
"""Each service's token -> its application class and its public mapping."""

_PAGE = 10


def public_event_ids(home: Path, token: str) -> list[str]:
    """The ``eventId`` of every public event in ``token``'s store under ``home``, in order."""
    application_class, own = STORES[token]
    to_contract = published_contract(SERVICE_NAMES[token], own)  # what its relay publishes
    env = eventsourcing_env(StoreSettings(kind="sqlite", home=home), token)
    app = application_class(env=env, service=token)
    ids: list[str] = []
    start = 1
    try:
        while True:
            page = app.recorder.select_notifications(start=start, limit=_PAGE)
            for notification in page:
                event = to_contract(app.mapper.to_domain_event(notification))
                if event is not None:
                    ids.append(event.event_id)
            if len(page) < _PAGE:
                return ids
            start = page[-1].id + 1
    finally:
        app.close()


class _Envelope(msgspec.Struct, rename="camel"):
    event_id: str
    type: str


async def stream_event_ids(env: Mapping[str, str]) -> tuple[Counter[str], dict[str, str]]:
    """How often each ``eventId`` is in ``WS_EVENTS`` (read whole, as user ``cli``), and each
    one's type."""
    nc = await connect_cli(login_from_env(env))
    js = nc.jetstream()
    name = f"cli-tail-{uuid.uuid4().hex}"
    seen: Counter[str] = Counter()
    types: dict[str, str] = {}
    try:
        info = await js.add_consumer(
            EVENT_STREAM,
            ConsumerConfig(
                name=name,
                deliver_policy=DeliverPolicy.ALL,
                ack_policy=AckPolicy.NONE,
                inactive_threshold=timedelta(minutes=1).total_seconds(),
                mem_storage=True,
                num_replicas=1,
            ),
        )
        left = info.num_pending
        sub = await js.pull_subscribe_bind(name, stream=EVENT_STREAM)
        while left:
            for msg in await sub.fetch(min(left, 256), timeout=5):
                envelope = msgspec.json.decode(msg.data, type=_Envelope)
                seen[envelope.event_id] += 1
                types[envelope.event_id] = envelope.type
                left = msg.metadata.num_pending
    finally:
        await js.delete_consumer(EVENT_STREAM, name)
        await nc.close()
    return seen, types
