"""Producer and consumer spans: one trace, parent and child, messaging attributes."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import baggage, trace
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from telemetry import consumer_span, producer_span, tracer

SUBJECT = "ws.evt.workspace.realized"


def test_producer_and_consumer_share_a_trace_as_parent_and_child(
    exporter: InMemorySpanExporter,
) -> None:
    # the producer injects its own span into the headers it yields
    with producer_span(SUBJECT) as headers:
        pass
    # the consumer (another process in real life) continues from those headers
    with consumer_span(SUBJECT, headers) as span:
        inner = span.get_span_context()
    producer, consumer = exporter.get_finished_spans()
    assert producer.name == f"publish {SUBJECT}"
    assert producer.kind is SpanKind.PRODUCER
    assert consumer.name == f"process {SUBJECT}"
    assert consumer.kind is SpanKind.CONSUMER
    assert consumer.context.trace_id == producer.context.trace_id
    assert consumer.parent is not None
    assert consumer.parent.span_id == producer.context.span_id
    assert consumer.parent.is_remote
    assert inner.span_id == consumer.context.span_id


def test_spans_carry_messaging_attributes(exporter: InMemorySpanExporter) -> None:
    with producer_span("ws.cmd.workspace.realize", operation="send"):
        pass
    with consumer_span("ws.cmd.workspace.realize", None, operation="receive"):
        pass
    sent, received = exporter.get_finished_spans()
    assert sent.name == "send ws.cmd.workspace.realize"
    assert dict(sent.attributes or {}) == {
        "messaging.system": "nats",
        "messaging.destination.name": "ws.cmd.workspace.realize",
        "messaging.operation.type": "send",
        "messaging.operation.name": "send",
    }
    assert (received.attributes or {})["messaging.operation.type"] == "receive"


def test_producer_span_is_current_inside_its_block(exporter: InMemorySpanExporter) -> None:
    with tracer().start_as_current_span("use case") as parent, producer_span(SUBJECT) as headers:
        current = trace.get_current_span().get_span_context()
    (producer, _) = exporter.get_finished_spans()
    assert current.span_id == producer.context.span_id
    assert producer.parent is not None
    assert producer.parent.span_id == parent.get_span_context().span_id
    assert format(current.span_id, "016x") in headers["traceparent"]


def test_consumer_without_headers_starts_a_new_trace(exporter: InMemorySpanExporter) -> None:
    with consumer_span(SUBJECT, None):
        pass
    (span,) = exporter.get_finished_spans()
    assert span.parent is None


def test_consumer_attaches_remote_baggage_and_restores_the_context(
    exporter: InMemorySpanExporter,
) -> None:
    token = otel_context.attach(baggage.set_baggage("run.id", "r-1"))
    try:
        with producer_span(SUBJECT) as headers:
            pass
    finally:
        otel_context.detach(token)
    assert baggage.get_baggage("run.id") is None
    with consumer_span(SUBJECT, headers):
        assert baggage.get_baggage("run.id") == "r-1"
    assert baggage.get_baggage("run.id") is None
    assert not trace.get_current_span().get_span_context().is_valid


def test_an_exception_marks_the_span_as_error_and_propagates(
    exporter: InMemorySpanExporter,
) -> None:
    with pytest.raises(RuntimeError, match="boom"), consumer_span(SUBJECT, None):
        raise RuntimeError("boom")
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert [event.name for event in span.events] == ["exception"]


def test_unknown_operations_are_refused() -> None:
    wrong_producer: Any = "process"
    wrong_consumer: Any = "publish"
    with (
        pytest.raises(ValueError, match="producer operation"),
        producer_span(SUBJECT, operation=wrong_producer),
    ):
        pass
    with (
        pytest.raises(ValueError, match="consumer operation"),
        consumer_span(SUBJECT, None, operation=wrong_consumer),
    ):
        pass
