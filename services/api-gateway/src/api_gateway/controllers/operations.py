"""``GET /api/operations/{operationId}``: asked of every service that owns long operations."""

from __future__ import annotations

import asyncio
from typing import Final

import msgspec
from litestar import Controller, get
from litestar.di import NamedDependency
from litestar.params import FromPath

from api_gateway.controllers.common import error_responses
from api_gateway.domain import NotFoundError
from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import BusReplyError, unreadable_answer
from api_gateway.http.security import access
from contracts.base import Accepted, ErrorReply, Ok, Principal
from contracts.errors import ErrorCode
from contracts.service import GetOperation, OperationView
from contracts.subjects import SERVICE_NAMES, ServiceToken, service_query
from natsbus import error_reply
from servicekit.access import Action, Resource

__all__ = ["OPERATION_OWNERS", "OperationController", "find_operation"]

OPERATION_OWNERS: Final[tuple[ServiceToken, ...]] = ("realizer", "supervisor")
"""The services whose long work becomes operations (ARCHITECTURE §2)."""

_ABSENT: Final = frozenset({ErrorCode.NOT_FOUND, ErrorCode.SERVICE_UNAVAILABLE})


async def find_operation(gateway: NamedDependency[Gateway], query: GetOperation) -> OperationView:
    """Ask every owner at once; the first ``ok`` wins and the other requests are cancelled.

    Raises:
        BusReplyError: No owner knows it and one failed otherwise (a timeout: 504), or one was
            unavailable (503: it may hold the operation, so "not found" would be a guess).
        NotFoundError: Every owner answered and none knows it.
    """
    timeout = gateway.settings.query_timeout

    async def ask(owner: ServiceToken) -> tuple[ServiceToken, Ok | ErrorReply | Accepted]:
        subject = service_query(owner, "operation")
        return owner, await gateway.bus.request(subject, query, timeout=timeout)

    pending = [asyncio.ensure_future(ask(owner)) for owner in OPERATION_OWNERS]
    failures: list[tuple[ServiceToken, ErrorReply | Accepted]] = []
    try:
        for next_reply in asyncio.as_completed(pending):
            owner, reply = await next_reply
            if isinstance(reply, Ok):
                return _view(reply)
            failures.append((owner, reply))
    finally:
        for task in pending:
            task.cancel()
    for _, failure in failures:
        if isinstance(failure, ErrorReply) and failure.code not in _ABSENT:
            raise BusReplyError(failure)
    unavailable = [
        owner
        for owner, failure in failures
        if isinstance(failure, ErrorReply) and failure.code == ErrorCode.SERVICE_UNAVAILABLE
    ]
    if unavailable:
        names = " and ".join(SERVICE_NAMES[owner] for owner in unavailable)
        verb = "is" if len(unavailable) == 1 else "are"
        raise BusReplyError(
            error_reply(
                ErrorCode.SERVICE_UNAVAILABLE,
                f"Operation {query.operation_id} may belong to {names}, which {verb} not "
                "answering; check `clipyard status` and retry.",
                details={
                    "operationId": query.operation_id,
                    "services": [SERVICE_NAMES[owner] for owner in unavailable],
                },
            )
        )
    raise NotFoundError(
        f"There is no operation {query.operation_id}.", operationId=query.operation_id
    )


def _view(reply: Ok) -> OperationView:
    try:
        return msgspec.convert(reply.result, OperationView)
    except msgspec.ValidationError as exc:
        message = f"A service answered an operation the gateway cannot read: {exc}"
        raise unreadable_answer(message) from exc


class OperationController(Controller):
    """Long operations that outlived their request (a 202 answer named them)."""

    path = "/api/operations"
    tags = ["operations"]

    @get(
        "/{operation_id:str}",
        operation_id="getOperation",
        opt=access(Resource.OPERATION, Action.READ),
        responses=error_responses("not_found", "service_unavailable", "timeout"),
    )
    async def get_operation(
        self,
        operation_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> OperationView:
        """Read an operation: ``{id, kind, status, result, error, workspaceOperationIds}``.

        ``result`` is what the synchronous call would have answered. Agent keys and run tokens
        read only the operations their agent or run started; any other answers 404, as an
        unknown id does. Errors: 401 ``unauthenticated``; 404 ``not_found``; 503
        ``service_unavailable`` (an owning service is not running, so whether the operation
        exists cannot be told); 504 ``timeout`` (an owning service did not answer).
        """
        return await find_operation(
            gateway, GetOperation(principal=principal, operation_id=operation_id)
        )
