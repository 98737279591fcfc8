"""What the workspace controllers share: the board-only guard, the node, bus calls answered as views.

Projects, project workspaces, issues and execution workspaces belong to the workspace-realizer:
each handler turns its HTTP call into one request to it. The realizer checks the principal's
company again (a bug here cannot cross tenants) and the *own* rules; the gateway checks the key
kind (the access guard, ``api_gateway.http.security``), the company in the path, and the shape of the
request, so that a malformed request sends nothing. The secrets
controller sends its calls to git-credentials through the same ``fetch`` and ``fetch_page``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

import msgspec
from litestar import Response
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler
from litestar.openapi.datastructures import ResponseSpec

from api_gateway.controllers.common import listing
from api_gateway.domain import GatewayError
from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import BusReplyError, unreadable_answer
from contracts.base import Accepted, ErrorReply, Ok
from contracts.errors import ErrorCode
from contracts.http import Accepted202
from contracts.workspace_views import Page
from servicekit.access import Access

__all__ = [
    "ACCEPTED",
    "InvalidRequestError",
    "accepted",
    "board_key",
    "fetch",
    "fetch_page",
    "node_of",
    "parse_choices",
    "perform",
    "request_result",
]

T = TypeVar("T")

ACCEPTED: Final = {
    202: ResponseSpec(
        data_container=Accepted202,
        generate_examples=False,
        description=(
            "Still running at the request deadline (`CLIPYARD_REQUEST_TIMEOUT`, 110 s by "
            "default): poll `GET /api/operations/{operationId}`."
        ),
    )
}


class InvalidRequestError(GatewayError):
    """The request does not match the schema in a way the body decoder cannot see."""

    code = ErrorCode.VALIDATION_FAILED


def board_key(
    connection: ASGIConnection[Any, Any, Any, Any], route_handler: BaseRouteHandler
) -> None:
    """Guard: a board key (or the operator page's session) only, where the access model lets
    agents reach their own things but the route is the board's all the same (creating and
    deleting issues: ARCHITECTURE §5.1, "within own"); the realizer refuses them again."""
    Access.of(connection.user).check_board(
        _BOARD_ACTIONS.get(str(getattr(route_handler, "operation_id", None) or ""), "do this")
    )


_BOARD_ACTIONS: Final = {
    "createIssue": "create issues",
    "deleteIssue": "delete issues",
    "createAgent": "create agents",
    "deleteAgent": "delete agents",
}
"""What the :func:`board_key` guard's refusal says the board alone may do, per route."""


def node_of(gateway: Gateway) -> str:
    """The node host-bound commands go to (``CLIPYARD_NODE_ID``; one node, ``local``, for now)."""
    return gateway.settings.service.node_id


def parse_choices(raw: str | None, allowed: Sequence[str], param: str) -> list[str]:
    """Split a comma list such as ``?status=active,idle``; unknown values answer 400 naming them.

    Raises:
        InvalidRequestError: A value is not one of ``allowed``.
    """
    if raw is None:
        return []
    values = [one.strip() for one in raw.split(",") if one.strip()]
    unknown = [one for one in values if one not in allowed]
    if unknown:
        listed = ", ".join(repr(one) for one in unknown)
        raise InvalidRequestError(
            f"Unknown {param} value {listed}; use one of {', '.join(allowed)}.",
            fields=[{"field": param, "message": f"unknown value {listed}", "source": "query"}],
            unknown=unknown,
        )
    return values


def _view(result: Any, view: type[T], subject: str) -> T:
    try:
        return msgspec.convert(result, view)
    except msgspec.ValidationError as exc:
        message = f"The service answering {subject} sent something the gateway cannot read: {exc}."
        raise unreadable_answer(message) from exc


async def _request(
    gateway: Gateway, subject: str, message: Any, timeout: float | None
) -> Ok | Accepted:
    reply = await gateway.bus.request(
        subject, message, timeout=timeout or gateway.settings.request_timeout
    )
    if isinstance(reply, ErrorReply):
        raise BusReplyError(reply)
    return reply


async def fetch(
    gateway: Gateway, subject: str, message: Any, view: type[T], *, timeout: float | None = None
) -> T:
    """Send a query and read its ``ok`` result as ``view`` (errors keep their status and code)."""
    reply = await _request(gateway, subject, message, timeout)
    if isinstance(reply, Accepted):
        message_text = f"A query on {subject} answered with a long operation."
        raise unreadable_answer(message_text)
    return _view(reply.result, view, subject)


async def fetch_page(
    gateway: Gateway, subject: str, message: Any, row: type[T]
) -> Response[Sequence[T]]:
    """Send a list query; answer a JSON array with the total in ``X-Total-Count``."""
    page = await fetch(gateway, subject, message, Page[row], timeout=gateway.settings.query_timeout)  # type: ignore[valid-type]
    return listing(page.items, page.total)


async def request_result(
    gateway: Gateway, subject: str, message: Any, view: type[T], *, timeout: float | None = None
) -> T | Accepted:
    """Send a command: its ``ok`` result read as ``view``, or ``Accepted`` for long work
    (errors keep their status and code)."""
    reply = await _request(gateway, subject, message, timeout)
    if isinstance(reply, Accepted):
        return reply
    return _view(reply.result, view, subject)


def accepted(reply: Accepted) -> Response[Accepted202]:
    """The 202 answer of long work: ``{operationId, status: "running"}``."""
    return Response(Accepted202(operation_id=reply.operation_id), status_code=202)


async def perform(
    gateway: Gateway,
    subject: str,
    message: Any,
    view: type[T],
    *,
    status_code: int | Callable[[T], int] = 200,
) -> Response[Any]:
    """Send a command: its result as ``view`` with ``status_code`` (or the status the result
    calls for), or 202 ``{operationId, status: "running"}`` for long work."""
    result = await request_result(gateway, subject, message, view)
    if isinstance(result, Accepted):
        return accepted(result)
    status = status_code(result) if callable(status_code) else status_code
    return Response(result, status_code=status)
