"""Messaging spans around NATS publish, request and processing (OTel semconv 1.27, messaging).

Span names are ``"<operation> <destination>"`` (``"publish ws.evt.workspace.realized"``); every
span carries ``messaging.system="nats"``, ``messaging.destination.name`` and
``messaging.operation.type``/``messaging.operation.name``. Handlers never touch propagation:
:func:`producer_span` yields the headers to send, :func:`consumer_span` takes the headers received.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Literal

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Tracer
from opentelemetry.util.types import AttributeValue

from telemetry.propagation import extract, inject

__all__ = [
    "MESSAGING_SYSTEM",
    "ConsumerOperation",
    "ProducerOperation",
    "consumer_span",
    "messaging_attributes",
    "producer_span",
    "tracer",
]

MESSAGING_SYSTEM = "nats"
TRACER_NAME = "clipyard"

ProducerOperation = Literal["publish", "send", "create"]
ConsumerOperation = Literal["process", "receive"]

_PRODUCER_OPERATIONS = frozenset({"publish", "send", "create"})
_CONSUMER_OPERATIONS = frozenset({"process", "receive"})


def tracer() -> Tracer:
    """Return the Clipyard tracer of the global provider.

    Returns:
        A tracer (a proxy until :func:`telemetry.configure_telemetry` has run).
    """
    return trace.get_tracer(TRACER_NAME)


def messaging_attributes(destination: str, operation: str) -> dict[str, AttributeValue]:
    """Build the messaging attributes of a span.

    Args:
        destination: The NATS subject.
        operation: The semconv operation type (``publish``, ``send``, ``process``, ...).

    Returns:
        The attribute mapping.
    """
    return {
        "messaging.system": MESSAGING_SYSTEM,
        "messaging.destination.name": destination,
        "messaging.operation.type": operation,
        "messaging.operation.name": operation,
    }


def _merge(
    base: dict[str, AttributeValue], extra: Mapping[str, AttributeValue] | None
) -> dict[str, AttributeValue]:
    if extra:
        base.update(extra)
    return base


@contextmanager
def producer_span(
    destination: str,
    *,
    operation: ProducerOperation = "publish",
    headers: dict[str, str] | None = None,
    attributes: Mapping[str, AttributeValue] | None = None,
) -> Iterator[dict[str, str]]:
    """Run a block inside a PRODUCER span and hand it the headers to send.

    Args:
        destination: The subject published or requested.
        operation: ``"publish"`` (events), ``"send"`` (requests) or ``"create"``.
        headers: Headers to add the context to (modified in place); a new dict when None.
        attributes: Extra span attributes (e.g. ``messaging.message.id``).

    Yields:
        The headers with ``traceparent`` (and baggage) of the producer span injected.

    Raises:
        ValueError: ``operation`` is not a producer operation.
    """
    if operation not in _PRODUCER_OPERATIONS:
        msg = f"producer operation must be one of {sorted(_PRODUCER_OPERATIONS)}, not {operation!r}"
        raise ValueError(msg)
    with tracer().start_as_current_span(
        f"{operation} {destination}",
        kind=SpanKind.PRODUCER,
        attributes=_merge(messaging_attributes(destination, operation), attributes),
    ):
        yield inject(headers)


@contextmanager
def consumer_span(
    destination: str,
    headers: Mapping[str, object] | None,
    *,
    operation: ConsumerOperation = "process",
    attributes: Mapping[str, AttributeValue] | None = None,
) -> Iterator[Span]:
    """Run a block inside a CONSUMER span continuing the trace found in the headers.

    The extracted context (remote parent and baggage) is attached for the block, so spans and
    logs inside it belong to the producer's trace and ``inject()`` forwards the baggage.

    Args:
        destination: The subject the message arrived on.
        headers: The message headers (None when the message has none: a new trace starts).
        operation: ``"process"`` (handling) or ``"receive"`` (pulling).
        attributes: Extra span attributes.

    Yields:
        The consumer span (current for the block).

    Raises:
        ValueError: ``operation`` is not a consumer operation.
    """
    if operation not in _CONSUMER_OPERATIONS:
        msg = f"consumer operation must be one of {sorted(_CONSUMER_OPERATIONS)}, not {operation!r}"
        raise ValueError(msg)
    token = otel_context.attach(extract(headers))
    try:
        with tracer().start_as_current_span(
            f"{operation} {destination}",
            kind=SpanKind.CONSUMER,
            attributes=_merge(messaging_attributes(destination, operation), attributes),
        ) as span:
            yield span
    finally:
        otel_context.detach(token)
