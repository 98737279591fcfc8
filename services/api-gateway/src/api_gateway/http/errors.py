"""Every error the gateway answers with, mapped to API.md's body through one table.

``{"error": "<a sentence a person can act on>", "code": "<snake_case>", "details": {...}}``.
Every code and its status come from the error catalogue (``contracts.errors``): a
``CodedError`` (the gateway's own errors, and the libs' such as ``servicekit.access``'s 403 and 404)
carries its code, status and details; a service's ``error`` reply keeps its status, code and
message; Litestar's own exceptions (schema mismatch, malformed JSON, body too large, unknown
route) are translated here so that no client input ever answers 5xx.
"""

from __future__ import annotations

import logging
import re
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from inspect import getmro
from typing import Any, Final

from eventsourcing.persistence import PersistenceError
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

from api_gateway.domain import ForbiddenError, NotFoundError, UnauthenticatedError
from contracts.base import ErrorReply
from contracts.errors import CodedError, ErrorCode, status_of
from contracts.http import ErrorBody
from eventstore.fence import StaleFenceError
from eventstore.store_errors import store_failure
from natsbus import error_reply

__all__ = [
    "BusReplyError",
    "ForbiddenError",
    "NotFoundError",
    "Problem",
    "UnauthenticatedError",
    "exception_handlers",
    "problem_of",
    "unreadable_answer",
]

log = logging.getLogger(__name__)


class BusReplyError(Exception):
    """A service answered with an ``error`` reply; its status, code and message reach the client."""

    def __init__(self, reply: ErrorReply) -> None:
        super().__init__(reply.message)
        self.reply = reply


def unreadable_answer(message: str) -> BusReplyError:
    """A service answered something the gateway cannot read: ``internal`` with 502, the status
    the catalogue allows beside 500 for this case (the fault is in the answer, not the gateway).

    Args:
        message: What was unreadable, for the client.
    """
    return BusReplyError(error_reply(ErrorCode.INTERNAL, message, status=502))


@dataclass(frozen=True)
class Problem:
    """An error answer before it is encoded."""

    status: int
    code: str
    message: str
    details: dict[str, object] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)


_FIELD_IN_MESSAGE = re.compile(r"field `([^`]+)`")

_BY_STATUS: Final = {
    status_of(code): code
    for code in (
        ErrorCode.UNAUTHENTICATED,
        ErrorCode.FORBIDDEN,
        ErrorCode.NOT_FOUND,
        ErrorCode.METHOD_NOT_ALLOWED,
    )
}
"""The code of a Litestar ``HTTPException`` by its status (the catalogue's status of each code)."""


def _problem(code: ErrorCode, message: str, details: dict[str, object] | None = None) -> Problem:
    """A problem with ``code``'s status from the catalogue."""
    return Problem(status_of(code), code.value, message, details or {})


def _from_coded_error(exc: CodedError) -> Problem:
    if exc.code == ErrorCode.INTERNAL:  # an unexpected failure: its text is for the log
        return _internal(exc)
    details = getattr(exc, "details", None)
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else {}
    body = dict(details) if isinstance(details, Mapping) else {}
    return Problem(exc.status, exc.code, str(exc) or exc.code, body, headers)


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
    return _problem(
        ErrorCode.VALIDATION_FAILED,
        f"The request does not match the schema ({listed}). See /api/openapi.json.",
        {"fields": fields},
    )


def _from_client_exception(exc: ClientException) -> Problem:
    if isinstance(exc.__cause__, SerializationException):
        return _problem(
            ErrorCode.INVALID_JSON,
            f"The body is not valid JSON ({exc.detail}); send a JSON object.",
            {"reason": exc.detail},
        )
    return Problem(exc.status_code, ErrorCode.BAD_REQUEST.value, str(exc.detail))


def _from_recursion(exc: RecursionError) -> Problem:
    # msgspec raises RecursionError (not DecodeError) for JSON nested beyond its depth limit.
    return _problem(
        ErrorCode.INVALID_JSON,
        "The body nests too deeply to decode; send a flatter JSON object.",
        {"reason": str(exc)},
    )


def _from_too_large(exc: RequestEntityTooLarge) -> Problem:
    return _problem(
        ErrorCode.PAYLOAD_TOO_LARGE,
        "The request body is over 256 KiB; send a smaller body.",
        {"limitBytes": 256 * 1024},
    )


def _from_http_exception(exc: HTTPException) -> Problem:
    status = exc.status_code
    code = _BY_STATUS.get(status)
    if code is ErrorCode.NOT_FOUND:
        return _problem(code, "There is no such path; see /api/docs for the API.")
    if code is ErrorCode.METHOD_NOT_ALLOWED:
        allowed = dict(exc.headers or {})  # Litestar's ``Allow``
        return Problem(
            status_of(code), code.value, f"{exc.detail}; see /api/docs for the API.", {}, allowed
        )
    if code is None:
        code = ErrorCode.INTERNAL if status >= 500 else ErrorCode.BAD_REQUEST
    return Problem(status, code.value, exc.detail)


def _from_store(exc: Exception) -> Problem:
    """The store failed (unreachable, a concurrent save, a moved lease): 503 or 409, not 500."""
    failure = store_failure(exc)
    if failure is None:
        return _internal(exc)
    log.warning("request failed on the store", extra={"error_type": type(exc).__name__})
    return Problem(failure.status, failure.code, failure.message)


def _internal(exc: Exception) -> Problem:
    log.error("unhandled error", exc_info=exc)
    return _problem(ErrorCode.INTERNAL, "The gateway failed unexpectedly; the error is in its log.")


_TABLE: Final[dict[type[Exception], Callable[[Any], Problem]]] = {
    CodedError: _from_coded_error,
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
    PersistenceError: _from_store,
    sqlite3.OperationalError: _from_store,
    StaleFenceError: _from_store,
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
