"""Starting a small service of a test's own application, as a real service starts
(``start_service``: store, relay, bus, inboxes), on an event stream no other test wrote to."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

import nats
import nats.js.errors

from contracts import subjects
from servicekit import ServiceRuntime, ServiceSettings, ServiceSpec, start_service

if TYPE_CHECKING:
    from contextlib import AsyncExitStack

    from eventstore import ServiceApplication

__all__ = ["fresh_event_stream", "start_test_service"]


async def fresh_event_stream(nats_url: str) -> None:
    """Delete ``WS_EVENTS`` (no other test's events); a service creates it again at start."""
    nc = await nats.connect(nats_url)
    try:
        with contextlib.suppress(nats.js.errors.NotFoundError):
            await nc.jetstream().delete_stream(subjects.EVENT_STREAM)
    finally:
        await nc.close()


async def start_test_service(
    stack: AsyncExitStack,
    home: Path,
    nats_url: str,
    name: str,
    application_class: type[ServiceApplication],
    env: dict[str, str] | None = None,
) -> ServiceRuntime:
    """Start service ``name`` of ``application_class`` (publishing nothing) with its home at
    ``home`` and the settings of ``env`` besides; it stops when ``stack`` closes."""
    spec = ServiceSpec(
        token="controller",
        name=name,
        version="0.0.1",
        application_class=application_class,
        to_contract=lambda _event: None,
    )
    settings = ServiceSettings.from_env(
        name, {"CLIPYARD_HOME": str(home), "CLIPYARD_NATS_URL": nats_url, **(env or {})}
    )
    return await start_service(spec, settings, stack, asyncio.Event())
