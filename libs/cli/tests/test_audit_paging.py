"""`clipyard audit` asks for fewer events at a time when a page is too large for one message."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import nats
import pytest

from clipyard_cli.audit import fetch_trail
from contracts.base import ErrorReply
from contracts.service import AuditTrail, GetAuditTrail, StoredEvent
from contracts.subjects import service_query
from natsbus import BusService, RequestContext

pytestmark = pytest.mark.integration

TOTAL = 7


async def test_pages_shrink_until_they_fit(nats_server: Any) -> None:
    nc = await nats.connect(nats_server.url)
    asked: list[int] = []

    async def audit(request: GetAuditTrail, ctx: RequestContext) -> AuditTrail | ErrorReply:
        asked.append(request.limit)
        if request.limit > 3:  # pretend each event is large: more than 3 do not fit
            return ErrorReply(code="message_too_large", message="too large", status=413)
        stop = min(TOTAL, request.offset + request.limit)
        events = [
            StoredEvent(
                aggregate_id="a-1",
                aggregate_version=v + 1,
                type="Thing.Happened",
                occurred_at=datetime.now(UTC),
            )
            for v in range(request.offset, stop)
        ]
        return AuditTrail(
            service="api-gateway",
            aggregate_id="a-1",
            aggregate_type=None,
            total=TOTAL,
            events=events,
        )

    service = await BusService.start(nc, name="api-gateway", version="0.0.1", description="test")
    await service.add_endpoint("audit", service_query("gateway", "audit"), audit, GetAuditTrail)
    await nc.flush()
    try:
        trail = await fetch_trail(nc, "gateway", "a-1")
    finally:
        await service.stop()
        await nc.drain()
    assert [e.aggregate_version for e in trail.events] == list(range(1, TOTAL + 1))
    assert asked[:3] == [200, 100, 50]
    assert max(asked[-3:]) <= 3
