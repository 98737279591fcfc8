"""Tracing, W3C context propagation over NATS and HTTP, structured logs."""

from __future__ import annotations

from telemetry.logs import configure_logging
from telemetry.propagation import extract, inject
from telemetry.redaction import scrub_url_secrets
from telemetry.setup import (
    add_span_processor,
    configure_telemetry,
    get_provider,
    shutdown_telemetry,
    span_files,
    spans_path,
)
from telemetry.spans import consumer_span, producer_span, tracer

__all__ = [
    "add_span_processor",
    "configure_logging",
    "configure_telemetry",
    "consumer_span",
    "extract",
    "get_provider",
    "inject",
    "producer_span",
    "scrub_url_secrets",
    "shutdown_telemetry",
    "span_files",
    "spans_path",
    "tracer",
]
