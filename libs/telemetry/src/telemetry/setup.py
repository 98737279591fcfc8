"""The process-wide tracer provider: configured once, from the standard ``OTEL_*`` variables.

Exporters:

* ``OTEL_TRACES_EXPORTER`` (comma-separated): ``otlp`` (OTLP over HTTP/protobuf), ``console``,
  ``none``. When it is unset, ``OTEL_EXPORTER_OTLP_ENDPOINT`` or
  ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` being set means ``otlp``; otherwise no OTel exporter.
  The OTLP exporter reads its own ``OTEL_EXPORTER_OTLP_*`` settings (endpoint, headers, timeout).
* ``home`` given: a JSON-lines file ``<home>/telemetry/spans.jsonl`` (the embedded default).

Sampling follows ``OTEL_TRACES_SAMPLER``; ``OTEL_SDK_DISABLED=true`` turns tracing off; batching
follows ``OTEL_BSP_*``.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from telemetry.jsonl import JsonlSpanExporter

__all__ = [
    "SPANS_FILE",
    "add_span_processor",
    "configure_telemetry",
    "get_provider",
    "shutdown_telemetry",
    "spans_path",
]

SPANS_FILE = Path("telemetry") / "spans.jsonl"
"""Where the JSONL exporter writes, relative to ``CLIPYARD_HOME``."""

_log = logging.getLogger(__name__)
_lock = threading.Lock()
_provider: TracerProvider | None = None

_KNOWN_EXPORTERS = frozenset({"otlp", "console", "none"})


def spans_path(home: Path) -> Path:
    """Return the JSONL span file of a Clipyard home.

    Args:
        home: The ``CLIPYARD_HOME`` folder.

    Returns:
        ``<home>/telemetry/spans.jsonl``.
    """
    return Path(home) / SPANS_FILE


def _exporter_names() -> list[str]:
    raw = os.environ.get("OTEL_TRACES_EXPORTER", "").strip()
    if not raw:
        endpoint_set = any(
            os.environ.get(name, "").strip()
            for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        )
        return ["otlp"] if endpoint_set else []
    names = [name.strip().lower() for name in raw.split(",") if name.strip()]
    unknown = sorted(set(names) - _KNOWN_EXPORTERS)
    if unknown:
        msg = f"OTEL_TRACES_EXPORTER: unsupported exporter(s) {unknown}; use otlp, console or none"
        raise ValueError(msg)
    return [name for name in names if name != "none"]


def _jsonl_delay() -> float | None:
    """The JSONL file is local and cheap: flush every 500 ms unless OTEL_BSP_SCHEDULE_DELAY says."""
    return None if os.environ.get("OTEL_BSP_SCHEDULE_DELAY") else 500.0


def _build_exporter(name: str) -> SpanExporter:
    if name == "console":
        return ConsoleSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def configure_telemetry(
    service_name: str, *, home: Path | None = None, version: str = "0.1.0"
) -> TracerProvider:
    """Configure the global tracer provider, once per process.

    Later calls return the provider of the first call unchanged (their arguments are ignored).

    Args:
        service_name: The ``service.name`` resource attribute (e.g. ``"workspace-realizer"``).
        home: ``CLIPYARD_HOME``; when given, spans are also appended to
            ``<home>/telemetry/spans.jsonl``.
        version: The ``service.version`` resource attribute.

    Returns:
        The global SDK tracer provider.

    Raises:
        ValueError: ``OTEL_TRACES_EXPORTER`` names an exporter this project does not ship.
    """
    global _provider
    with _lock:
        if _provider is not None:
            return _provider
        existing = trace.get_tracer_provider()
        if isinstance(existing, TracerProvider):
            _log.warning("a tracer provider was already set elsewhere; telemetry adopts it")
            _provider = existing
            return existing
        resource = Resource.create({SERVICE_NAME: service_name, SERVICE_VERSION: version})
        provider = TracerProvider(resource=resource)
        for name in _exporter_names():
            provider.add_span_processor(BatchSpanProcessor(_build_exporter(name)))
        if home is not None:
            exporter = JsonlSpanExporter(spans_path(home))
            provider.add_span_processor(
                BatchSpanProcessor(exporter, schedule_delay_millis=_jsonl_delay())
            )
        trace.set_tracer_provider(provider)
        _provider = provider
        return provider


def get_provider() -> TracerProvider | None:
    """Return the provider set by :func:`configure_telemetry`, if any.

    Returns:
        The configured provider, or None before the first call.
    """
    return _provider


def add_span_processor(processor: SpanProcessor) -> None:
    """Add a span processor to the configured provider (tests attach in-memory exporters).

    Args:
        processor: Any SDK span processor.

    Raises:
        RuntimeError: :func:`configure_telemetry` has not been called.
    """
    if _provider is None:
        msg = "configure_telemetry() must be called before add_span_processor()"
        raise RuntimeError(msg)
    _provider.add_span_processor(processor)


def shutdown_telemetry(timeout_millis: int = 5000) -> None:
    """Flush every exporter and shut the provider down (no-op when not configured).

    Spans ended afterwards are dropped: the global provider cannot be replaced.

    Args:
        timeout_millis: How long the flush may take.
    """
    provider = _provider
    if provider is None:
        return
    provider.force_flush(timeout_millis)
    provider.shutdown()
