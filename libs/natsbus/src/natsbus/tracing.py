"""Span annotations shared by the bus client and the bus service (propagation is telemetry's)."""

from __future__ import annotations

from opentelemetry.trace import Span, Status, StatusCode

from contracts.base import ErrorReply, Reply

__all__ = ["annotate_reply"]


def annotate_reply(span: Span, reply: Reply) -> None:
    """Record a reply's outcome on a span: ``error.type`` for errors, ERROR status for 5xx.

    Args:
        span: The producer span of a request or the consumer span of its handling.
        reply: The reply sent or received.
    """
    if not isinstance(reply, ErrorReply):
        return
    span.set_attribute("error.type", reply.code)
    if reply.status >= 500:
        span.set_status(Status(StatusCode.ERROR, f"{reply.code}: {reply.message}"))
