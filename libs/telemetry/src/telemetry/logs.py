"""Structured logs: one JSON object per line on stderr, with trace ids and secrets redacted.

Each line has ``ts`` (ISO 8601 UTC), ``level``, ``service``, ``logger``, ``msg``, the ``trace_id``
and ``span_id`` of the current span when there is one, the ``extra=`` fields of the call, and
``exc`` for exceptions. Before formatting, :class:`RedactingFilter` replaces the values of
secret-looking fields with ``"***"`` and scrubs credentials out of the message, string fields and
exception text (see :mod:`telemetry.redaction`).

Given a ``log_file`` (``CLIPYARD_LOG_FILE``, set by ``clipyard up``), the process's stdout and
stderr are pointed at that file and it is rotated by size after each record
(:mod:`telemetry.logfile`).
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from opentelemetry import trace
from opentelemetry.trace import format_span_id, format_trace_id

from telemetry.logfile import ProcessLogFile
from telemetry.redaction import redact_value, scrub_url_secrets
from telemetry.rotation import DEFAULT_LOG_ROTATION, Rotation

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


def _extra_fields(record: logging.LogRecord) -> dict[str, object]:
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
        entry: dict[str, object] = {
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
    """The handler installed by :func:`configure_logging` (recognised on reconfiguration).

    With a ``log_file``, it rotates that file (when full) after each record it writes.
    """

    def __init__(self, stream: IO[str], log_file: ProcessLogFile | None = None) -> None:
        super().__init__(stream)
        self.log_file = log_file

    def emit(self, record: logging.LogRecord) -> None:
        """Write the record, then rotate the log file if it is full."""
        super().emit(record)
        if self.log_file is not None:
            try:
                self.log_file.rotate_if_full()
            except OSError:
                self.handleError(record)

    def close(self) -> None:
        """Close the handler (the log file stops rotating; stdout and stderr stay on it)."""
        if self.log_file is not None:
            self.log_file.close()
        super().close()


def configure_logging(
    service_name: str,
    *,
    level: str | int = "INFO",
    stream: IO[str] | None = None,
    log_file: Path | None = None,
    rotation: Rotation = DEFAULT_LOG_ROTATION,
) -> logging.Handler:
    """Send the root logger's records to stderr as redacted JSON lines.

    Calling it again replaces the handler installed before (no duplicate lines).

    Args:
        service_name: The ``service`` field of every line.
        level: The root logger level (name or number).
        stream: Where to write; ``sys.stderr`` when None.
        log_file: When given (and ``stream`` is None), this process's stdout and stderr are
            pointed at this file (appended to), which is rotated by ``rotation``.
        rotation: When ``log_file`` rotates and how many old files are kept.

    Returns:
        The installed handler.
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, _ClipyardHandler):
            root.removeHandler(handler)
            handler.close()
    owned = ProcessLogFile(log_file, rotation) if log_file is not None and stream is None else None
    handler = _ClipyardHandler(stream if stream is not None else sys.stderr, owned)
    handler.addFilter(RedactingFilter())
    handler.setFormatter(JsonFormatter(service_name))
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    return handler
