"""A span exporter writing one JSON object per line (the embedded default's trace store).

Several service processes append to the same file, and it rotates by size
(:class:`telemetry.rotating_file.RotatingFile`: ``spans.jsonl.1`` .. ``spans.jsonl.<backups>``,
under an ``flock`` on ``spans.jsonl.lock``): each batch is written with a single ``write(2)``, so
lines from different processes never interleave and no line is split between two files. The
exporter writes spans as it gets them: :func:`telemetry.configure_telemetry` puts
it behind :class:`telemetry.redacting.RedactingSpanExporter` (as every exporter), so what reaches
the file is redacted. The ``telemetry`` folder is created 0700.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import format_span_id, format_trace_id

from telemetry.rotating_file import RotatingFile
from telemetry.rotation import DEFAULT_SPANS_ROTATION, Rotation

__all__ = ["JsonlSpanExporter", "span_to_dict"]


def _iso(ns: int | None) -> str | None:
    if ns is None:
        return None
    seconds, rest = divmod(ns, 1_000_000_000)
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(seconds))}.{rest // 1000:06d}Z"


def _attributes(attributes: Mapping[str, Any] | None) -> dict[str, object]:
    if not attributes:
        return {}
    return {
        key: list(value) if isinstance(value, tuple) else value for key, value in attributes.items()
    }


def span_to_dict(span: ReadableSpan) -> dict[str, object]:
    """Render a finished span as a JSON-ready dict.

    Args:
        span: A finished SDK span.

    Returns:
        ``name, kind, trace_id, span_id, parent_span_id, service, start, end, duration_ms,
        attributes, status, events`` (ids in lowercase hex, times in ISO 8601 UTC), as the span
        has them (redaction is :class:`telemetry.redacting.RedactingSpanExporter`'s job).
    """
    ctx = span.get_span_context()
    parent = span.parent
    start, end = span.start_time, span.end_time
    service = span.resource.attributes.get("service.name") if span.resource else None
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": format_trace_id(ctx.trace_id) if ctx else None,
        "span_id": format_span_id(ctx.span_id) if ctx else None,
        "parent_span_id": format_span_id(parent.span_id) if parent else None,
        "service": service,
        "start": _iso(start),
        "end": _iso(end),
        "duration_ms": (end - start) / 1e6 if start is not None and end is not None else None,
        "attributes": _attributes(span.attributes),
        "status": {"code": span.status.status_code.name, "description": span.status.description},
        "events": [
            {
                "name": event.name,
                "time": _iso(event.timestamp),
                "attributes": _attributes(event.attributes),
            }
            for event in span.events
        ],
    }


class JsonlSpanExporter(SpanExporter):
    """Append finished spans to a JSON-lines file that rotates by size.

    Args:
        path: The file; its parent folders are created (the last one 0700).
        rotation: When it rotates and how many old files are kept (default: 20 MiB, 5).
    """

    def __init__(self, path: Path, rotation: Rotation = DEFAULT_SPANS_ROTATION) -> None:
        self.path = path
        if not path.parent.is_dir():
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            path.parent.chmod(0o700)
        self._file: RotatingFile | None = RotatingFile(path, rotation)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write the spans, one line each, in one append.

        Args:
            spans: Finished spans.

        Returns:
            ``SUCCESS``, or ``FAILURE`` after shutdown or on an I/O error.
        """
        if not spans:
            return SpanExportResult.SUCCESS
        data = "".join(
            json.dumps(span_to_dict(span), default=str, separators=(",", ":")) + "\n"
            for span in spans
        ).encode()
        file = self._file
        if file is None:
            return SpanExportResult.FAILURE
        try:
            file.write(data)
        except (OSError, ValueError):
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered here (each export is written at once).

        Args:
            timeout_millis: Unused.

        Returns:
            Always True.
        """
        return True

    def shutdown(self) -> None:
        """Close the file; later exports fail."""
        file, self._file = self._file, None
        if file is not None:
            file.close()
