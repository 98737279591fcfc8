"""What every controller shares: paging, documented error answers, bus replies as HTTP."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, TypeVar

from litestar import Response
from litestar.datastructures import ResponseHeader
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import QueryParameter

from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import BusReplyError
from contracts.base import Accepted, ErrorReply, Ok
from contracts.errors import CATALOGUE, ErrorCode
from contracts.http import Accepted202, ErrorBody

__all__ = [
    "TOTAL_COUNT",
    "Page",
    "answer",
    "error_responses",
    "listing",
    "provide_page",
]

T = TypeVar("T")

TOTAL_COUNT: Final = [
    ResponseHeader(
        name="X-Total-Count",
        description="How many rows there are in all (the body holds one page of them).",
        documentation_only=True,
    )
]

_ALWAYS: Final = (ErrorCode.UNAUTHENTICATED,)


@dataclass(frozen=True)
class Page:
    """``?limit=`` (1..200, default 50) and ``?offset=`` (0..) of a list request."""

    limit: int
    offset: int


def provide_page(
    limit: Annotated[int, QueryParameter(ge=1, le=200, description="Rows per page, 1..200.")] = 50,
    offset: Annotated[int, QueryParameter(ge=0, description="Rows to skip.")] = 0,
) -> Page:
    """The requested page (out of range answers 400 ``validation_failed`` naming the parameter)."""
    return Page(limit=limit, offset=offset)


def listing(rows: Sequence[T], total: int) -> Response[Sequence[T]]:
    """A list answer: a JSON array, with the total in ``X-Total-Count``."""
    return Response(rows, headers={"X-Total-Count": str(total)})


def error_responses(*codes: ErrorCode | str, public: bool = False) -> dict[int, ResponseSpec]:
    """OpenAPI ``responses`` for the error codes a handler may answer, grouped by status.

    Each code is listed under its status with its description, both from the error catalogue
    (``contracts.errors.CATALOGUE``).

    Args:
        *codes: Codes of the catalogue (``validation_failed`` and, unless ``public``,
            ``unauthenticated`` are always added).
        public: The route needs no key (so no 401).

    Returns:
        Status -> a response spec whose description lists the codes.

    Raises:
        ValueError: A code is not in the catalogue (when the controller is imported).
    """
    by_status: dict[int, list[str]] = {}
    for code in (*codes, *(() if public else _ALWAYS), ErrorCode.VALIDATION_FAILED):
        entry = CATALOGUE[ErrorCode(code)]
        line = f"`{entry.code.value}`: {entry.description}"
        if line not in by_status.setdefault(entry.status, []):
            by_status[entry.status].append(line)
    return {
        status: ResponseSpec(
            data_container=ErrorBody, generate_examples=False, description="; ".join(lines)
        )
        for status, lines in sorted(by_status.items())
    }


async def answer(gateway: Gateway, subject: str, message: Any) -> Any:
    """Send one bus request and turn its reply into an HTTP answer.

    ``ok`` gives its result; ``accepted`` gives a 202 ``{operationId, status: "running"}``;
    ``error`` raises ``BusReplyError`` (its status, code and message reach the client; a service
    that does not answer is 504 ``timeout``).
    """
    reply = await gateway.bus.request(subject, message, timeout=gateway.settings.request_timeout)
    match reply:
        case Ok(result=result):
            return result
        case Accepted(operation_id=operation_id):
            return Response(Accepted202(operation_id=operation_id), status_code=202)
        case ErrorReply():
            raise BusReplyError(reply)
    raise AssertionError(f"unexpected reply {reply!r}")  # pragma: no cover
