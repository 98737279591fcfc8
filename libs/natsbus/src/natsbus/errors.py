"""Turning a handler's exception into an ``error`` reply (STYLE 17: one mapping at the bus edge).

The default mapper trusts exceptions that say what they are: a ``code`` (a string, such as an
:class:`contracts.errors.ErrorCode`), optionally a ``status`` and ``details``. Everything else is
a bug as far as the requester is concerned: ``internal``, 500, a short message and no stack trace
(the service logs the trace).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

from contracts.base import ErrorReply
from contracts.errors import ErrorCode, status_of

__all__ = [
    "INTERNAL_MESSAGE",
    "ErrorMapper",
    "default_error_mapper",
    "error_reply",
    "internal_error",
]

ErrorMapper: TypeAlias = Callable[[Exception], ErrorReply]
"""Maps an exception raised by a handler to the error reply sent back."""

INTERNAL_MESSAGE: Final = "internal error; the service log has the details"


def error_reply(
    code: ErrorCode | str,
    message: str,
    *,
    status: int | None = None,
    details: Mapping[str, Any] | None = None,
) -> ErrorReply:
    """Build an error reply, taking the status from the code's default when not given.

    Args:
        code: The error code.
        message: A human-readable message.
        status: The HTTP status; the catalogue's for the code (else 500) when omitted.
        details: Extra facts for the client.

    Returns:
        The error reply.
    """
    text = str(code)
    if status is None:
        status = status_of(text)
    return ErrorReply(code=text, message=message, status=status, details=dict(details or {}))


def internal_error() -> ErrorReply:
    """The reply for a failure the client cannot act on: ``internal``, 500, no details."""
    return error_reply(ErrorCode.INTERNAL, INTERNAL_MESSAGE)


def default_error_mapper(exc: Exception) -> ErrorReply:
    """Map an exception with ``code`` (and optionally ``status``, ``details``) to those.

    Any other exception becomes ``internal`` / 500 with a fixed short message: what went wrong
    inside a service is for its log, not for the client.

    Args:
        exc: What the handler raised.

    Returns:
        The error reply to send.
    """
    code = getattr(exc, "code", None)
    if not isinstance(code, str) or not code:
        return internal_error()
    status = getattr(exc, "status", None)
    if not isinstance(status, int) or isinstance(status, bool) or not 400 <= status <= 599:
        status = None
    details = getattr(exc, "details", None)
    if not isinstance(details, Mapping):
        details = None
    return error_reply(code, str(exc) or code, status=status, details=details)
