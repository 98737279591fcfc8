"""One trace per request: the caller's ``traceparent`` continues into the gateway's bus requests."""

from __future__ import annotations

from typing import Any

from litestar.testing import TestClient
from opentelemetry import baggage
from opentelemetry.trace import SpanKind

from contracts.base import ErrorReply
from telemetry.propagation import inject

Client = TestClient[Any]

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


def _nobody_knows_it(bus: Any) -> None:
    """Every operation owner answers "not found" (so the gateway answers 404)."""
    for subject in ("ws.qry.realizer.operation", "ws.qry.supervisor.operation"):
        bus.replies[subject] = ErrorReply(code="not_found", message="no such operation", status=404)


def test_the_http_trace_continues_into_the_bus(
    client: Client, admin: dict[str, str], bus: Any, span_recorder: Any
) -> None:
    _nobody_knows_it(bus)
    headers = {**admin, "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
    response = client.get("/api/operations/0c0e1f2a-5b6c-4d7e-8f90-a1b2c3d4e5f6", headers=headers)
    assert response.status_code == 404
    # The bus requests were sent inside the caller's trace.
    assert {f"{sent.trace_id:032x}" for sent in bus.sent} == {TRACE_ID}
    # The gateway recorded one SERVER span, child of the caller's span, named by route.
    (span,) = [s for s in span_recorder.finished() if s.kind == SpanKind.SERVER]
    assert span.name == "GET /api/operations/{operation_id}"
    assert f"{span.context.trace_id:032x}" == TRACE_ID
    assert span.parent is not None
    assert f"{span.parent.span_id:016x}" == PARENT_ID
    assert span.attributes["http.response.status_code"] == 404


def test_without_traceparent_a_new_trace_starts(
    client: Client, admin: dict[str, str], bus: Any, span_recorder: Any
) -> None:
    client.get("/api/operations/0c0e1f2a-5b6c-4d7e-8f90-a1b2c3d4e5f6", headers=admin)
    (span,) = [s for s in span_recorder.finished() if s.kind == SpanKind.SERVER]
    assert span.parent is None
    assert {sent.trace_id for sent in bus.sent} == {span.context.trace_id}


def test_incoming_baggage_is_dropped_but_the_trace_continues(
    client: Client, admin: dict[str, str], bus: Any, span_recorder: Any
) -> None:
    seen: list[dict[str, object]] = []
    sent_headers: list[dict[str, str]] = []
    answer = bus.request

    async def spying(subject: str, message: Any, *, timeout: float) -> Any:
        # What the bus client would propagate (and the event store save) from here.
        seen.append(dict(baggage.get_all()))
        sent_headers.append(inject())
        return await answer(subject, message, timeout=timeout)

    _nobody_knows_it(bus)
    bus.request = spying
    headers = {
        **admin,
        "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01",
        "baggage": "tenant=evil,clipyard.actor=admin",
    }
    response = client.get("/api/operations/0c0e1f2a-5b6c-4d7e-8f90-a1b2c3d4e5f6", headers=headers)
    assert response.status_code == 404
    assert seen
    assert all(one == {} for one in seen)
    assert all("baggage" not in one for one in sent_headers)
    assert {one["traceparent"].split("-")[1] for one in sent_headers} == {TRACE_ID}
    (span,) = [s for s in span_recorder.finished() if s.kind == SpanKind.SERVER]
    assert f"{span.context.trace_id:032x}" == TRACE_ID
