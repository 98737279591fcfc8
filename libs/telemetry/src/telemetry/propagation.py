"""W3C trace context and baggage over message and HTTP headers: the one place it is done.

NATS message headers (``dict[str, str]`` in nats-py) and HTTP headers (any mapping, matched
case-insensitively) both go through :func:`inject` and :func:`extract`.
"""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.context import Context
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

__all__ = ["PROPAGATION_HEADERS", "extract", "inject", "trace_headers"]

PROPAGATION_HEADERS = ("traceparent", "tracestate", "baggage")
"""The header names this module reads and writes."""

_PROPAGATOR = CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()])


class _CaseInsensitiveGetter(Getter[Mapping[str, object]]):
    """Reads a header whatever its case (HTTP) and whatever its value shape (str or list)."""

    def get(self, carrier: Mapping[str, object], key: str) -> list[str] | None:
        value = carrier.get(key)
        if value is None:
            lowered = key.lower()
            value = next((v for k, v in carrier.items() if k.lower() == lowered), None)
        if value is None:
            return None
        if isinstance(value, bytes):
            return [value.decode("latin-1")]
        if isinstance(value, str):
            return [value]
        if isinstance(value, list | tuple):
            return [v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in value]
        return [str(value)]

    def keys(self, carrier: Mapping[str, object]) -> list[str]:
        return list(carrier.keys())


_GETTER = _CaseInsensitiveGetter()


def inject(
    headers: dict[str, str] | None = None, *, context: Context | None = None
) -> dict[str, str]:
    """Write the current trace context and baggage into headers.

    Args:
        headers: Headers to add to (modified in place); a new dict when None.
        context: The context to propagate; the current one when None.

    Returns:
        The headers, with ``traceparent`` (and ``tracestate``, ``baggage`` when there are any)
        set. Nothing is added when there is no valid span and no baggage.
    """
    carrier: dict[str, str] = {} if headers is None else headers
    _PROPAGATOR.inject(carrier, context=context)
    return carrier


def extract(headers: Mapping[str, object] | None, *, context: Context | None = None) -> Context:
    """Read trace context and baggage from headers.

    Args:
        headers: NATS or HTTP headers; None (a message without headers) is allowed.
        context: The context to build on; the current one when None.

    Returns:
        A context whose current span is the remote parent (when the headers carry a valid
        ``traceparent``) and whose baggage is the headers' baggage.
    """
    return _PROPAGATOR.extract(headers or {}, context=context, getter=_GETTER)


def trace_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """Keep only the propagation headers (what the event store saves with an event).

    Args:
        headers: Any headers.

    Returns:
        The ``traceparent``, ``tracestate`` and ``baggage`` entries that are present.
    """
    if not headers:
        return {}
    return {k.lower(): v for k, v in headers.items() if k.lower() in PROPAGATION_HEADERS}
