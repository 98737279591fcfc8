"""W3C trace context and baggage survive inject then extract, for NATS and HTTP headers."""

from __future__ import annotations

from opentelemetry import baggage, trace
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from telemetry import extract, inject, tracer
from telemetry.propagation import trace_headers


def test_inject_outside_any_span_adds_nothing() -> None:
    assert inject() == {}


def test_round_trip_keeps_trace_and_span_ids(exporter: InMemorySpanExporter) -> None:
    # inject inside a span
    with tracer().start_as_current_span("outer") as span:
        headers = inject()
        sent = span.get_span_context()
    assert headers["traceparent"].startswith("00-")
    # extract outside it: the remote parent is the span that injected
    remote = trace.get_current_span(extract(headers)).get_span_context()
    assert remote.is_valid
    assert remote.is_remote
    assert remote.trace_id == sent.trace_id
    assert remote.span_id == sent.span_id


def test_inject_adds_to_given_headers_in_place(exporter: InMemorySpanExporter) -> None:
    given = {"Nats-Msg-Id": "svc:1"}
    with tracer().start_as_current_span("outer"):
        returned = inject(given)
    assert returned is given
    assert set(given) == {"Nats-Msg-Id", "traceparent"}


def test_baggage_travels_with_the_context(exporter: InMemorySpanExporter) -> None:
    token = otel_context.attach(baggage.set_baggage("company.id", "c-42"))
    try:
        with tracer().start_as_current_span("outer"):
            headers = inject()
    finally:
        otel_context.detach(token)
    assert "company.id=c-42" in headers["baggage"]
    assert baggage.get_baggage("company.id", extract(headers)) == "c-42"


def test_http_headers_are_matched_whatever_their_case(exporter: InMemorySpanExporter) -> None:
    with tracer().start_as_current_span("outer") as span:
        headers = inject()
    http_headers = {"Traceparent": headers["traceparent"], "Content-Type": "application/json"}
    remote = trace.get_current_span(extract(http_headers)).get_span_context()
    assert remote.trace_id == span.get_span_context().trace_id


def test_extract_of_missing_or_broken_headers_gives_no_parent() -> None:
    for headers in (None, {}, {"traceparent": "garbage"}):
        assert not trace.get_current_span(extract(headers)).get_span_context().is_valid


def test_trace_headers_keeps_only_propagation_headers() -> None:
    headers = {"traceparent": "00-x", "Baggage": "a=b", "Nats-Msg-Id": "svc:1"}
    assert trace_headers(headers) == {"traceparent": "00-x", "baggage": "a=b"}
    assert trace_headers(None) == {}
