"""The one place spans are redacted on their way out: a wrapper around any span exporter.

:func:`telemetry.setup.configure_telemetry` puts every exporter it builds (OTLP, console, the JSONL
file) behind :class:`RedactingSpanExporter`, so no exporter sees a span unredacted. Redacted are
the status description (often an exception's text, such as a git URL with a token in it), the
span's attributes, its events' attributes (``exception.message``, ``exception.stacktrace``) and its
links' attributes, with the rules of :mod:`telemetry.redaction`. The resource is not (it holds
``service.name`` and ``service.version``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Link, Status

from telemetry.redaction import redact_attributes, scrub_url_secrets

__all__ = ["RedactingSpanExporter", "redact_span"]


class _RedactedSpan(ReadableSpan):
    """A redacted copy of a finished span that keeps the original's dropped counts."""

    def __init__(self, original: ReadableSpan) -> None:
        status = original.status
        description = status.description
        super().__init__(
            name=original.name,
            context=original.context,
            parent=original.parent,
            resource=original.resource,
            attributes=redact_attributes(original.attributes),
            events=[
                Event(event.name, redact_attributes(event.attributes), event.timestamp)
                for event in original.events
            ],
            links=[
                Link(link.context, redact_attributes(link.attributes)) for link in original.links
            ],
            kind=original.kind,
            status=Status(status.status_code, scrub_url_secrets(description))
            if description
            else status,
            start_time=original.start_time,
            end_time=original.end_time,
            instrumentation_scope=original.instrumentation_scope,
        )
        self._dropped = (
            original.dropped_attributes,
            original.dropped_events,
            original.dropped_links,
        )

    @property
    def dropped_attributes(self) -> int:
        return self._dropped[0]

    @property
    def dropped_events(self) -> int:
        return self._dropped[1]

    @property
    def dropped_links(self) -> int:
        return self._dropped[2]


def _has_secrets(attributes: Mapping[str, Any] | None) -> bool:
    """Whether redaction would change any of these attributes."""
    if not attributes:
        return False
    return redact_attributes(attributes) != dict(attributes)


def redact_span(span: ReadableSpan) -> ReadableSpan:
    """A copy of a finished span with its status description and attributes redacted.

    Args:
        span: A finished SDK span.

    Returns:
        The redacted copy (the span itself is not changed: other processors still see it whole),
        or the span itself when redaction would change nothing in it (most spans: a route, a
        subject, ids and counts), which saves a copy per span.
    """
    description = span.status.description
    if (
        not span.events
        and not span.links
        and (not description or scrub_url_secrets(description) == description)
        and not _has_secrets(span.attributes)
    ):
        return span
    return _RedactedSpan(span)


class RedactingSpanExporter(SpanExporter):
    """Hand redacted copies of the spans to another exporter.

    Args:
        inner: The exporter that sends or writes the spans.
    """

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export redacted copies of ``spans`` through the inner exporter.

        Args:
            spans: Finished spans.

        Returns:
            The inner exporter's result.
        """
        return self.inner.export([redact_span(span) for span in spans])

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the inner exporter.

        Args:
            timeout_millis: How long it may take.

        Returns:
            The inner exporter's answer.
        """
        return self.inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Shut the inner exporter down."""
        self.inner.shutdown()
