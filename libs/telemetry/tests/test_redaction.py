"""Scrubbing's first look (a text with nothing secret-looking is left as it is, at once) and the
span exporter's pass-through of spans redaction would not change."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from telemetry.redacting import redact_span
from telemetry.redaction import scrub_url_secrets


def test_a_text_with_nothing_secret_looking_is_returned_as_it_is() -> None:
    text = "GET /api/companies/{company_id:str} 200 " + "/worktrees/ACME-12 " * 1000
    assert scrub_url_secrets(text) is text


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ("clone https://u:pw@host/r.git?x=1", "pw"),
        ("Authorization: BEARER abc.def", "abc.def"),
        ("PASSWORD=hunter2", "hunter2"),
        # Case-blind matching folds more than lower() does: non-ASCII text is always scrubbed.
        ("\u017fecret=hunter2", "hunter2"),
        ("pa\u017f\u017fword=hunter2", "hunter2"),
    ],
)
def test_every_secret_the_patterns_know_is_still_hidden(text: str, hidden: str) -> None:
    scrubbed = scrub_url_secrets(text)
    assert hidden not in scrubbed
    assert "***" in scrubbed


def _finished(attributes: dict[str, str]) -> ReadableSpan:
    kept = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({}), shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(kept))
    with provider.get_tracer("t").start_as_current_span("GET /api/health", attributes=attributes):
        pass
    provider.shutdown()
    (span,) = kept.get_finished_spans()
    return span


def test_a_span_redaction_would_not_change_is_exported_as_it_is() -> None:
    span = _finished({"http.route": "/api/companies/{company_id:str}", "url.path": "/api/x"})
    assert redact_span(span) is span


def test_a_span_with_a_secret_is_exported_as_a_redacted_copy() -> None:
    span = _finished({"http.route": "/api/x", "url.full": "https://u:pw@host/x"})
    redacted = redact_span(span)
    assert redacted is not span
    assert dict(redacted.attributes or {})["url.full"] == "https://***@host/x"
    assert dict(span.attributes or {})["url.full"] == "https://u:pw@host/x"
