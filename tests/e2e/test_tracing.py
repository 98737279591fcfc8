"""One HTTP request yields one trace: gateway (HTTP) -> NATS request -> the service's handler."""

from __future__ import annotations

import asyncio
import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from telemetry import span_files

pytestmark = pytest.mark.e2e


async def _spans_of(home: Path, trace_id: str, want: int) -> list[dict[str, Any]]:
    """The spans of one trace written by every service, waiting for the exporters' flush (read
    from ``spans.jsonl`` and its rotated files, in case it rotated meanwhile)."""
    found: list[dict[str, Any]] = []
    for _ in range(50):
        lines = [line for path in span_files(home) for line in path.read_text().splitlines()]
        found = [s for s in map(json.loads, lines) if s["trace_id"] == trace_id]
        if len(found) >= want:
            return found
        await asyncio.sleep(0.1)
    return found


async def test_one_request_is_one_trace_across_gateway_nats_and_services(stack: Any) -> None:
    async with stack.admin as admin:
        company = (await admin.post("/api/companies", json={"name": "Trace Co"})).json()
        key = (
            await admin.post(
                f"/api/companies/{company['id']}/api-keys", json={"name": "t", "kind": "board"}
            )
        ).json()["key"]
    trace_id = secrets.token_hex(16)
    caller_span = secrets.token_hex(8)
    async with stack.client(key) as board:
        # The gateway asks the services that own operations; none knows this id.
        answer = await board.get(
            "/api/operations/0f0e0d0c-0b0a-4090-8070-605040302010",
            headers={"traceparent": f"00-{trace_id}-{caller_span}-01"},
        )
    assert answer.status_code == 404

    spans = await _spans_of(stack.home, trace_id, want=5)
    by_service: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_service.setdefault(span["service"], []).append(span)
    # The gateway's HTTP span continues the caller's trace.
    server = next(s for s in by_service["api-gateway"] if s["kind"] == "SERVER")
    assert server["parent_span_id"] == caller_span
    # Its bus requests are PRODUCER spans inside it, on NATS subjects.
    sends = {s["name"]: s for s in by_service["api-gateway"] if s["kind"] == "PRODUCER"}
    assert "send ws.qry.realizer.operation" in sends
    assert sends["send ws.qry.realizer.operation"]["attributes"]["messaging.system"] == "nats"
    # Each owning service handled it in a CONSUMER span that is a child of that request.
    for service, subject in (
        ("workspace-realizer", "ws.qry.realizer.operation"),
        ("runtime-supervisor", "ws.qry.supervisor.operation"),
    ):
        handled = next(s for s in by_service[service] if s["kind"] == "CONSUMER")
        assert handled["name"] == f"process {subject}"
        assert handled["parent_span_id"] == sends[f"send {subject}"]["span_id"]
