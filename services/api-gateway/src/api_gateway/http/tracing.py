"""One SERVER span per HTTP request, continuing the caller's W3C trace context.

The context is extracted with ``telemetry.propagation`` (the one place propagation is done) and
attached for the whole request, so the bus client's PRODUCER span (which injects on the way out)
and the service's CONSUMER span all belong to the caller's trace: gateway -> NATS -> service.

Only the trace context (``traceparent``, ``tracestate``) is taken from the caller. Incoming
``baggage`` is dropped: whatever the current context carries travels with every bus request and is
stored with the events it causes, and a client must not choose what is stored.
"""

from __future__ import annotations

from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from opentelemetry import context as otel_context
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from telemetry.propagation import extract
from telemetry.spans import tracer

__all__ = ["TRUSTED_HEADERS", "TracingMiddleware"]

TRUSTED_HEADERS = frozenset({"traceparent", "tracestate"})
"""The propagation headers taken from an HTTP caller (never ``baggage``)."""


class TracingMiddleware(ASGIMiddleware):
    """Start a SERVER span named ``"<METHOD> <route template>"`` for every HTTP request."""

    scopes = (ScopeType.HTTP,)

    def __init__(self) -> None:
        """Take the tracer once (a proxy until telemetry is configured, then the provider's)."""
        self._tracer = tracer()

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        """Run the request inside its span; record the route and the response status."""
        headers = {
            name: v.decode("latin-1")
            for k, v in scope["headers"]
            if (name := k.decode("latin-1").lower()) in TRUSTED_HEADERS
        }
        method = str(scope.get("method", "GET"))
        route = str(scope.get("path_template") or scope["path"])
        attributes: dict[str, AttributeValue] = {
            "http.request.method": method,
            "http.route": route,
            "url.path": scope["path"],
            "url.scheme": str(scope.get("scheme", "http")),
        }
        # From an empty context: nothing but the caller's trace context (no baggage) is current.
        token = otel_context.attach(extract(headers, context=Context()))
        try:
            with self._tracer.start_as_current_span(
                f"{method} {route}", kind=SpanKind.SERVER, attributes=attributes
            ) as span:

                async def send_with_status(message: Message) -> None:
                    if message["type"] == "http.response.start":
                        status = int(message["status"])
                        span.set_attribute("http.response.status_code", status)
                        if status >= 500:
                            span.set_status(Status(StatusCode.ERROR))
                    await send(message)

                await next_app(scope, receive, send_with_status)
        finally:
            otel_context.detach(token)
