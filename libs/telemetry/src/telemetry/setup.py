"""The process-wide tracer provider: configured once, from the standard ``OTEL_*`` variables.

Exporters:

* ``OTEL_TRACES_EXPORTER`` (comma-separated): ``otlp`` (OTLP over HTTP/protobuf), ``console``,
  ``none``. When it is unset, ``OTEL_EXPORTER_OTLP_ENDPOINT`` or
  ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` being set means ``otlp``; otherwise no OTel exporter.
  The OTLP exporter reads its own ``OTEL_EXPORTER_OTLP_*`` settings (endpoint, headers, timeout).
* ``home`` given: a JSON-lines file ``<home>/telemetry/spans.jsonl`` (the embedded default),
  shared by every service of the home and rotated by size (``spans.jsonl.1`` the newest backup;
  ``spans_rotation``, from ``CLIPYARD_SPANS_MAX_BYTES`` and ``CLIPYARD_SPANS_BACKUPS`` in the
  services: 20 MiB, 5 backups). :func:`span_files` lists them, oldest first.

Every exporter sits behind :class:`telemetry.redacting.RedactingSpanExporter`: what leaves the
process has its status description and attributes redacted.

Sampling follows ``OTEL_TRACES_SAMPLER``; ``OTEL_SDK_DISABLED=true`` turns tracing off; batching
follows ``OTEL_BSP_*``.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from telemetry.jsonl import JsonlSpanExporter
from telemetry.redacting import RedactingSpanExporter
from telemetry.rotation import DEFAULT_SPANS_ROTATION, Rotation, kept_files

__all__ = [
    "SPANS_FILE",
    "add_span_processor",
    "configure_telemetry",
    "get_provider",
    "shutdown_telemetry",
    "span_files",
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


def span_files(home: Path) -> list[Path]:
    """Return every JSONL span file of a Clipyard home that exists, oldest first.

    Args:
        home: The ``CLIPYARD_HOME`` folder.

    Returns:
        The rotated files (``spans.jsonl.<n>`` .. ``spans.jsonl.1``), then ``spans.jsonl``.
    """
    return kept_files(spans_path(home))


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
        return RedactingSpanExporter(ConsoleSpanExporter())
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return RedactingSpanExporter(OTLPSpanExporter())


def configure_telemetry(
    service_name: str,
    *,
    home: Path | None = None,
    version: str = "0.1.0",
    spans_rotation: Rotation = DEFAULT_SPANS_ROTATION,
) -> TracerProvider:
    """Configure the global tracer provider, once per process.

    Later calls return the provider of the first call unchanged (their arguments are ignored).

    Args:
        service_name: The ``service.name`` resource attribute (e.g. ``"workspace-realizer"``).
        home: ``CLIPYARD_HOME``; when given, spans are also appended to
            ``<home>/telemetry/spans.jsonl``.
        version: The ``service.version`` resource attribute.
        spans_rotation: When that file rotates and how many old ones are kept.

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
            exporter = RedactingSpanExporter(JsonlSpanExporter(spans_path(home), spans_rotation))
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


def shutdown_telemetry(timeout_millis: int = 1000) -> bool:
    """Flush every exporter and shut the provider down, within ``timeout_millis`` (no-op when not
    configured).

    Each span processor flushes and shuts down on a daemon thread of its own, all in parallel, so
    a slow exporter (an OTLP endpoint that accepts and never answers) delays neither the others
    (the local JSONL file) nor the process's exit: what is still exporting after the timeout is
    abandoned. The SDK's own exit hook is removed (it would wait for the exporters again, without
    a bound). Spans ended afterwards are dropped: the global provider cannot be replaced.

    Args:
        timeout_millis: How long flushing and shutting down may take, in all.

    Returns:
        True when every processor finished in time.
    """
    provider = _provider
    if provider is None:
        return True
    atexit.unregister(provider.shutdown)
    deadline = time.monotonic() + max(timeout_millis, 0) / 1000
    threads = [
        threading.Thread(
            target=_close_processor,
            args=(processor, timeout_millis),
            name="telemetry-shutdown",
            daemon=True,
        )
        for processor in _processors_of(provider)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    late = sum(thread.is_alive() for thread in threads)
    if late:
        _log.warning(
            "%d span exporter(s) did not finish within %d ms; their last spans are dropped",
            late,
            timeout_millis,
        )
    return not late


def _processors_of(provider: TracerProvider) -> list[SpanProcessor]:
    """The provider's span processors (the SDK keeps them in its multi-processor)."""
    active = provider._active_span_processor
    processors = getattr(active, "_span_processors", None)
    return list(processors) if processors is not None else [active]


def _close_processor(processor: SpanProcessor, timeout_millis: int) -> None:
    try:
        processor.force_flush(timeout_millis)
    except Exception:
        _log.warning("flushing spans failed", exc_info=True)
    try:
        processor.shutdown()
    except Exception:
        _log.warning("shutting a span exporter down failed", exc_info=True)
