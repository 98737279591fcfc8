"""One trace per request: the caller's ``traceparent`` continues into the gateway's bus requests."""

from __future__ import annotations

from typing import Any

from litestar.testing import TestClient
from opentelemetry.trace import SpanKind

Client = TestClient[Any]

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


def test_the_http_trace_continues_into_the_bus(
    client: Client, admin: dict[str, str], bus: Any, span_recorder: Any
) -> None:
    headers = {**admin, "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
    response = client.get("/api/operations/op-1", headers=headers)
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
    client.get("/api/operations/op-1", headers=admin)
    (span,) = [s for s in span_recorder.finished() if s.kind == SpanKind.SERVER]
    assert span.parent is None
    assert {sent.trace_id for sent in bus.sent} == {span.context.trace_id}
