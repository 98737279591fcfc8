"""Structured logs: one JSON object per line on stderr, with trace ids and secrets redacted.

Each line has ``ts`` (ISO 8601 UTC), ``level``, ``service``, ``logger``, ``msg``, the ``trace_id``
and ``span_id`` of the current span when there is one, the ``extra=`` fields of the call, and
``exc`` for exceptions. Before formatting, :class:`RedactingFilter` replaces the values of
secret-looking fields with ``"***"`` and scrubs credentials out of the message, string fields and
exception text (see :mod:`telemetry.redaction`).
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import IO, Any

from opentelemetry import trace
from opentelemetry.trace import format_span_id, format_trace_id

from telemetry.redaction import redact_value, scrub_url_secrets

__all__ = [
    "JsonFormatter",
    "RedactingFilter",
    "configure_logging",
    "scrub_url_secrets",
]

_RESERVED = frozenset(
    {
        *logging.LogRecord("", 0, "", 0, "", None, None).__dict__,
        "message",
        "asctime",
        "taskName",
        "trace_id",
        "span_id",
    }
)


def _extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    return {
        k: v for k, v in record.__dict__.items() if k not in _RESERVED and not k.startswith("_")
    }


class RedactingFilter(logging.Filter):
    """Redact a record in place and stamp it with the current trace and span ids.

    The message is rendered (``msg % args``) and scrubbed; every ``extra=`` field whose name
    looks secret becomes ``"***"``, other string fields are scrubbed.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact the record; never drops it.

        Args:
            record: The record being handled.

        Returns:
            Always True.
        """
        if not getattr(record, "_clipyard_redacted", False):
            try:
                message = record.getMessage()
            except Exception:  # a bad format string: keep the raw text, still scrubbed
                message = f"{record.msg!s} {record.args!r}"
            record.msg = scrub_url_secrets(message)
            record.args = None
            for key, value in _extra_fields(record).items():
                setattr(record, key, redact_value(key, value))
            record._clipyard_redacted = True
        if not hasattr(record, "trace_id"):
            ctx = trace.get_current_span().get_span_context()
            record.trace_id = format_trace_id(ctx.trace_id) if ctx.is_valid else None
            record.span_id = format_span_id(ctx.span_id) if ctx.is_valid else None
        return True


class JsonFormatter(logging.Formatter):
    """Format records as single-line JSON objects.

    Args:
        service_name: The ``service`` field of every line.
    """

    def __init__(self, service_name: str) -> None:
        super().__init__()
        self.service_name = service_name

    def format(self, record: logging.LogRecord) -> str:
        """Render one record.

        Args:
            record: The record (already passed through :class:`RedactingFilter`).

        Returns:
            One line of JSON, without the newline.
        """
        moment = datetime.fromtimestamp(record.created, tz=UTC)
        entry: dict[str, Any] = {
            "ts": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "service": self.service_name,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        trace_id = getattr(record, "trace_id", None)
        if trace_id:
            entry["trace_id"] = trace_id
            entry["span_id"] = getattr(record, "span_id", None)
        for key, value in _extra_fields(record).items():
            entry.setdefault(key, value)
        if record.exc_info:
            entry["exc"] = scrub_url_secrets(self.formatException(record.exc_info))
        if record.stack_info:
            entry["stack"] = scrub_url_secrets(self.formatStack(record.stack_info))
        return json.dumps(entry, default=str, ensure_ascii=False)


class _ClipyardHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler installed by :func:`configure_logging` (recognised on reconfiguration)."""


def configure_logging(
    service_name: str, *, level: str | int = "INFO", stream: IO[str] | None = None
) -> logging.Handler:
    """Send the root logger's records to stderr as redacted JSON lines.

    Calling it again replaces the handler installed before (no duplicate lines).

    Args:
        service_name: The ``service`` field of every line.
        level: The root logger level (name or number).
        stream: Where to write; ``sys.stderr`` when None.

    Returns:
        The installed handler.
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, _ClipyardHandler):
            root.removeHandler(handler)
            handler.close()
    handler = _ClipyardHandler(stream if stream is not None else sys.stderr)
    handler.addFilter(RedactingFilter())
    handler.setFormatter(JsonFormatter(service_name))
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    return handler
