"""Every error the gateway answers with, mapped to API.md's body through one table.

``{"error": "<a sentence a person can act on>", "code": "<snake_case>", "details": {...}}``.
Gateway errors carry their own code and status; a service's ``error`` reply keeps its status, code
and message; Litestar's own exceptions (schema mismatch, malformed JSON, body too large, unknown
route) are translated here so that no client input ever answers 5xx.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from inspect import getmro
from typing import Any, Final

from litestar import MediaType, Request, Response
from litestar.exceptions import (
    ClientException,
    HTTPException,
    MethodNotAllowedException,
    NotAuthorizedException,
    NotFoundException,
    PermissionDeniedException,
    SerializationException,
    ValidationException,
)
from litestar.exceptions.http_exceptions import RequestEntityTooLarge

from api_gateway.domain import ForbiddenError, GatewayError, NotFoundError, UnauthenticatedError
from contracts.base import ErrorReply
from contracts.http import ErrorBody

__all__ = [
    "ERROR_CODES",
    "SERVICE_ERROR_CODES",
    "BusReplyError",
    "ForbiddenError",
    "NotFoundError",
    "Problem",
    "UnauthenticatedError",
    "exception_handlers",
    "problem_of",
]

log = logging.getLogger(__name__)

ERROR_CODES: Final[dict[str, tuple[int, str]]] = {
    "invalid_json": (400, "the body is not JSON"),
    "validation_failed": (400, "the request does not match the schema (details.fields names them)"),
    "unauthenticated": (401, "no key, an unknown or revoked key, or an expired session"),
    "forbidden": (403, "this key may not do this, or the X-CSRF-Token header is missing or wrong"),
    "not_found": (404, "no such resource in your company"),
    "method_not_allowed": (405, "the path does not take this method"),
    "payload_too_large": (413, "the body is over 256 KiB"),
    "invalid_name": (422, "a name is empty or longer than 200 characters"),
    "invalid_issue_prefix": (422, "the issue prefix is not 1-10 upper-case letters A-Z"),
    "key_kind_not_allowed": (422, "this key may not create a key of that kind"),
    "service_unavailable": (503, "the service that owns this is not running"),
    "timeout": (504, "a service did not answer in time"),
}
"""The codes the gateway itself answers with (services add their own through error replies)."""

SERVICE_ERROR_CODES: Final[dict[str, tuple[int, str]]] = {
    "state_conflict": (409, "conflicts with the current state"),
    "has_open_dependents": (409, "something open still depends on it (open workspaces, children)"),
    "identifier_taken": (409, "another issue of the company has that identifier"),
    "close_blocked": (
        409,
        "archive refused: close readiness is blocked (details name the reasons)",
    ),
    "reopen_pending": (409, "the workspace was just reopened and cannot be archived yet"),
    "not_reopenable": (409, "the workspace is open, or cannot be rebuilt"),
    "lifecycle_conflict": (409, "the workspace was archived or reopened meanwhile; read it again"),
    "workspace_path_required": (422, "a project workspace needs `cwd` or `repoUrl`"),
    "workspace_validation_failed": (422, "the workspace cannot be realized as configured"),
    "configuration_incomplete": (422, "the project or workspace config cannot give what was asked"),
    "low_trust_violation": (422, "an untrusted agent needs an isolated workspace"),
    "managed_checkout_failed": (422, "the managed clone of the repository failed"),
    "branch_reconcile_refused": (422, "the branch cannot be reconciled now (the message says why)"),
    "unprocessable": (422, "well-formed but not allowed"),
    "workspace_runtime_lease_conflict": (
        409,
        "another issue, run or agent holds the workspace's runtime-control lease "
        "(details name the owner)",
    ),
    "workspace_runtime_port_allocation_exhausted": (
        409,
        "no free port for the service; retry the start or configure a different port",
    ),
    "port_conflict": (409, "the service's fixed port is held (details name the owner)"),
    "runtime_service_start_failed": (
        409,
        "the service did not become ready (the message has the reason and its last output)",
    ),
    "runtime_provisioning_failed": (
        409,
        "the workspace's runtime-provision command failed (details name the operation)",
    ),
    "run_finished": (409, "the run has finished already"),
}
"""Codes the workspace-realizer, the runtime-supervisor and the heartbeat controller answer with,
for the OpenAPI descriptions (contracts.errors)."""


class BusReplyError(Exception):
    """A service answered with an ``error`` reply; its status, code and message reach the client."""

    def __init__(self, reply: ErrorReply) -> None:
        super().__init__(reply.message)
        self.reply = reply


@dataclass(frozen=True)
class Problem:
    """An error answer before it is encoded."""

    status: int
    code: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)


_FIELD_IN_MESSAGE = re.compile(r"field `([^`]+)`")


def _from_gateway_error(exc: GatewayError) -> Problem:
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else {}
    return Problem(exc.status, exc.code, str(exc), dict(exc.details), headers)


def _from_bus_reply(exc: BusReplyError) -> Problem:
    reply = exc.reply
    status = reply.status if 400 <= reply.status <= 599 else 502
    return Problem(status, reply.code, reply.message, dict(reply.details))


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.capitalize() for part in rest)


def _from_validation(exc: ValidationException) -> Problem:
    fields: list[dict[str, str]] = []
    for item in exc.extra if isinstance(exc.extra, list) else []:
        message = str(item.get("message", ""))
        name = str(item.get("key", ""))
        named = _FIELD_IN_MESSAGE.search(message)
        if name == "data":
            name = named.group(1) if named else "body"
            if message == "'data'":
                message = "A JSON body is required"
        source = str(getattr(item.get("source", ""), "value", item.get("source", "")))
        if source == "query":
            name = _camel(name)  # the parameter as the client spelt it (``reuseEligible``)
        fields.append({"field": name, "message": message, "source": source})
    listed = "; ".join(f"{one['field']}: {one['message']}" for one in fields) or str(exc.detail)
    return Problem(
        400,
        "validation_failed",
        f"The request does not match the schema ({listed}). See /api/openapi.json.",
        {"fields": fields},
    )


def _from_client_exception(exc: ClientException) -> Problem:
    if isinstance(exc.__cause__, SerializationException):
        return Problem(
            400,
            "invalid_json",
            f"The body is not valid JSON ({exc.detail}); send a JSON object.",
            {"reason": exc.detail},
        )
    return Problem(exc.status_code, "bad_request", str(exc.detail))


def _from_recursion(exc: RecursionError) -> Problem:
    # msgspec raises RecursionError (not DecodeError) for JSON nested beyond its depth limit.
    return Problem(
        400,
        "invalid_json",
        "The body nests too deeply to decode; send a flatter JSON object.",
        {"reason": str(exc)},
    )


def _from_too_large(exc: RequestEntityTooLarge) -> Problem:
    return Problem(
        413,
        "payload_too_large",
        "The request body is over 256 KiB; send a smaller body.",
        {"limitBytes": 256 * 1024},
    )


def _from_http_exception(exc: HTTPException) -> Problem:
    code = {401: "unauthenticated", 403: "forbidden", 404: "not_found", 405: "method_not_allowed"}
    status = exc.status_code
    if status == 404:
        return Problem(404, "not_found", "There is no such path; see /api/docs for the API.")
    if status == 405:
        return Problem(405, "method_not_allowed", f"{exc.detail}; see /api/docs for the API.")
    return Problem(
        status, code.get(status, "internal" if status >= 500 else "bad_request"), exc.detail
    )


def _internal(exc: Exception) -> Problem:
    log.error("unhandled error", exc_info=exc)
    return Problem(500, "internal", "The gateway failed unexpectedly; the error is in its log.")


_TABLE: Final[dict[type[Exception], Callable[[Any], Problem]]] = {
    GatewayError: _from_gateway_error,
    BusReplyError: _from_bus_reply,
    ValidationException: _from_validation,
    RequestEntityTooLarge: _from_too_large,
    NotAuthorizedException: _from_http_exception,
    PermissionDeniedException: _from_http_exception,
    NotFoundException: _from_http_exception,
    MethodNotAllowedException: _from_http_exception,
    ClientException: _from_client_exception,
    HTTPException: _from_http_exception,
    RecursionError: _from_recursion,
    Exception: _internal,
}
"""Exception class -> translation; the most specific class in the exception's MRO wins."""


def problem_of(exc: Exception) -> Problem:
    """Translate any exception into the error answer the client gets.

    Args:
        exc: The exception raised while serving a request.

    Returns:
        Its status, code, message and details.
    """
    for cls in getmro(type(exc)):
        if translate := _TABLE.get(cls):
            return translate(exc)
    return _internal(exc)


def _handle(request: Request[Any, Any, Any], exc: Exception) -> Response[ErrorBody]:
    problem = problem_of(exc)
    return Response(
        ErrorBody(error=problem.message, code=problem.code, details=problem.details),
        status_code=problem.status,
        media_type=MediaType.JSON,
        headers=dict(problem.headers),
    )


def exception_handlers() -> dict[type[Exception], Callable[..., Response[ErrorBody]]]:
    """Litestar's ``exception_handlers`` for every class of the table (one handler for all)."""
    return dict.fromkeys(_TABLE, _handle)
