"""The redacting exporter wrapper: status description, attributes, event and link attributes."""

from __future__ import annotations

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, Status, StatusCode

from telemetry.redacting import RedactingSpanExporter

SECRET_URL = "https://x-access-token:ghp_SECRET@github.com/acme/app.git"


def _spans() -> tuple[list[ReadableSpan], list[ReadableSpan]]:
    """Spans as a plain exporter and as a redacting-wrapped one see them."""
    plain, behind = InMemorySpanExporter(), InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "redacting"}), shutdown_on_exit=False
    )
    provider.add_span_processor(SimpleSpanProcessor(plain))
    provider.add_span_processor(SimpleSpanProcessor(RedactingSpanExporter(behind)))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("linked") as linked:
        pass
    with tracer.start_as_current_span(
        "git clone",
        attributes={
            "url.full": SECRET_URL,
            "db.password": "hunter2",
            "argv": ("git", "clone", SECRET_URL),
            "attempt": 2,
        },
        links=[Link(linked.get_span_context(), {"origin": SECRET_URL})],
    ) as span:
        try:
            raise RuntimeError(f"fatal: could not read from {SECRET_URL}")
        except RuntimeError as exc:
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, f"clone failed: {exc}"))
    provider.shutdown()
    return list(plain.get_finished_spans()), list(behind.get_finished_spans())


def _texts(span: ReadableSpan) -> str:
    parts = [str(span.status.description), repr(dict(span.attributes or {}))]
    parts += [repr(dict(event.attributes or {})) for event in span.events]
    parts += [repr(dict(link.attributes or {})) for link in span.links]
    return " ".join(parts)


def test_what_the_wrapped_exporter_gets_holds_no_secret() -> None:
    plain, redacted = _spans()
    span = next(s for s in redacted if s.name == "git clone")
    assert "ghp_SECRET" not in _texts(span)
    assert "hunter2" not in _texts(span)
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == (
        "clone failed: fatal: could not read from https://***@github.com/acme/app.git"
    )
    assert span.attributes is not None
    assert span.attributes["url.full"] == "https://***@github.com/acme/app.git"
    assert span.attributes["db.password"] == "***"
    assert span.attributes["argv"] == ("git", "clone", "https://***@github.com/acme/app.git")
    assert span.attributes["attempt"] == 2
    (exception,) = span.events
    assert exception.name == "exception"
    assert "https://***@github.com" in str(exception.attributes["exception.message"])
    assert "https://***@github.com" in str(exception.attributes["exception.stacktrace"])
    assert span.links[0].attributes == {"origin": "https://***@github.com/acme/app.git"}
    # Identity, timing and resource are kept.
    original = next(s for s in plain if s.name == "git clone")
    assert span.context == original.context
    assert (span.start_time, span.end_time) == (original.start_time, original.end_time)
    assert span.resource.attributes["service.name"] == "redacting"
    assert span.instrumentation_scope == original.instrumentation_scope
    # The other processors still see the span whole: the wrapper redacts a copy.
    assert "ghp_SECRET" in _texts(original)


def test_the_wrapper_passes_results_flush_and_shutdown_through() -> None:
    inner = InMemorySpanExporter()
    wrapper = RedactingSpanExporter(inner)
    assert wrapper.export([]) is SpanExportResult.SUCCESS
    assert wrapper.force_flush() is True
    wrapper.shutdown()
    assert wrapper.export([]) is SpanExportResult.FAILURE  # the inner one is shut down
