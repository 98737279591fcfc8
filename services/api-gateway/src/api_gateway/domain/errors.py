"""The gateway's errors: each a ``CodedError`` whose catalogue code and status feed the HTTP body
(``api_gateway.http.errors``). Pure: no I/O."""

from __future__ import annotations

from contracts.errors import DetailedError, ErrorCode

__all__ = [
    "AgentNotFoundError",
    "ApiKeyNotFoundError",
    "CompanyNotFoundError",
    "ForbiddenError",
    "GatewayError",
    "InvalidInputError",
    "InvalidIssuePrefixError",
    "InvalidNameError",
    "KeyKindNotAllowedError",
    "NotFoundError",
    "RunEndedError",
    "RunTokenUnusableError",
    "UnauthenticatedError",
]


class GatewayError(DetailedError):
    """Base of every error the gateway raises on purpose; ``code``/``status`` feed the HTTP body."""

    code = ErrorCode.UNPROCESSABLE


class UnauthenticatedError(GatewayError):
    """No credentials, or credentials that do not (or no longer) work."""

    code = ErrorCode.UNAUTHENTICATED


class ForbiddenError(GatewayError):
    """Authenticated, but not allowed to do this."""

    code = ErrorCode.FORBIDDEN


class NotFoundError(GatewayError):
    """No such resource, or one of another company (existence is not revealed)."""

    code = ErrorCode.NOT_FOUND


class CompanyNotFoundError(NotFoundError):
    """No company with this id (or one the principal may not see)."""


class ApiKeyNotFoundError(NotFoundError):
    """No API key with this id (or one of another company)."""


class AgentNotFoundError(NotFoundError):
    """An agent key was asked for an agent that was deleted."""


class InvalidNameError(GatewayError):
    """A name is empty or too long."""

    code = ErrorCode.INVALID_NAME


class InvalidIssuePrefixError(GatewayError):
    """An issue prefix is not 1-10 upper-case letters, or none can be derived from the name."""

    code = ErrorCode.INVALID_ISSUE_PREFIX


class InvalidInputError(GatewayError):
    """Well-formed but not allowed (an ``allowedRoots`` entry that is no folder below ``/``)."""

    code = ErrorCode.UNPROCESSABLE


class KeyKindNotAllowedError(GatewayError):
    """This principal may not create a key of this kind (yet)."""

    code = ErrorCode.KEY_KIND_NOT_ALLOWED


class RunEndedError(GatewayError):
    """A token was asked for a run that has ended already."""

    code = ErrorCode.RUN_FINISHED


class RunTokenUnusableError(GatewayError):
    """A mint the gateway cannot serve as asked (an expiry in the past, another agent's run)."""

    code = ErrorCode.UNPROCESSABLE
