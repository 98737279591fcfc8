"""Authentication (Bearer key or session cookie + CSRF), the admin guard, company scoping.

Every route needs a principal unless it opts out with ``opt={"exclude_from_auth": True}`` (health,
sign-in/out, the OpenAPI document and docs). Missing, unknown or revoked keys answer 401 with a
sentence saying what to do; a board key asking about another company gets 404, as if the company
did not exist (API.md).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from litestar.connection import ASGIConnection
from litestar.middleware import AbstractAuthenticationMiddleware, AuthenticationResult

from api_gateway.application import CompanyNotFoundError
from api_gateway.dependencies import ADMIN
from api_gateway.domain import ForbiddenError, UnauthenticatedError, hash_secret
from api_gateway.run_tokens import is_run_token
from contracts.base import Actor, Principal

if TYPE_CHECKING:
    from litestar.handlers.base import BaseRouteHandler

    from api_gateway.dependencies import Gateway

__all__ = [
    "CSRF_HEADER",
    "SESSION_COOKIE",
    "AuthenticationMiddleware",
    "Credential",
    "admin_only",
    "authenticate",
    "check_company",
    "check_run_headers",
    "not_agent",
]

SESSION_COOKIE: Final = "clipyard_session"
CSRF_HEADER: Final = "X-CSRF-Token"
_SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
RUN_HEADERS: Final = ("X-Run-Id", "X-Paperclip-Run-Id")


@dataclass(frozen=True)
class Credential:
    """What a request authenticated with, kept to check it again while a response lasts.

    An event stream stays open for hours: it checks its credential again every second, so a
    revoked key or an ended or expired session stops it (ARCHITECTURE §5).
    """

    authorization: str | None = field(default=None, repr=False)
    """The ``Authorization`` header, when the request sent one (it wins over the cookie)."""
    session_id: str | None = field(default=None, repr=False)
    """The session cookie's value, when there is no ``Authorization`` header."""

    @classmethod
    def of(cls, connection: ASGIConnection[Any, Any, Any, Any]) -> Credential:
        """The credential a request carries (the header first, else the session cookie)."""
        if (header := connection.headers.get("authorization")) is not None:
            return cls(authorization=header)
        return cls(session_id=connection.cookies.get(SESSION_COOKIE) or None)


async def authenticate(
    gateway: Gateway, credential: Credential, *, method: str = "GET", csrf: str | None = None
) -> Principal:
    """The principal of a credential, or ``UnauthenticatedError`` saying why there is none.

    Args:
        gateway: The gateway (its admin key hash and application).
        credential: The request's header or session cookie.
        method: The request method: a cookie-authenticated change also needs ``csrf``.
        csrf: The ``X-CSRF-Token`` header.

    Raises:
        UnauthenticatedError: No credential, or one that does not (or no longer) work.
        ForbiddenError: A cookie-authenticated change without the right CSRF token.
    """
    if credential.authorization is not None:
        return await _bearer(gateway, credential.authorization)
    if credential.session_id:
        return await _session(gateway, credential.session_id, method, csrf)
    raise UnauthenticatedError(
        "This request needs a key: send 'Authorization: Bearer <key>' with the admin key "
        "(CLIPYARD_ADMIN_KEY) or a board key, or sign in with POST /api/session."
    )


class AuthenticationMiddleware(AbstractAuthenticationMiddleware):
    """Find the principal of a request: ``Authorization: Bearer <key>``, else the session cookie."""

    async def authenticate_request(
        self, connection: ASGIConnection[Any, Any, Any, Any]
    ) -> AuthenticationResult:
        """Authenticate, or raise ``UnauthenticatedError`` / ``ForbiddenError`` (CSRF)."""
        credential = Credential.of(connection)
        principal = await authenticate(
            connection.app.state.gateway,
            credential,
            method=str(connection.scope.get("method", "GET")),
            csrf=connection.headers.get(CSRF_HEADER),
        )
        check_run_headers(principal, connection.headers)
        return AuthenticationResult(principal, "key" if credential.authorization else "session")


async def _bearer(gateway: Gateway, header: str) -> Principal:
    scheme, _, key = header.partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        raise UnauthenticatedError(
            "The Authorization header must be 'Bearer <key>'.", header="Authorization"
        )
    if is_run_token(key):
        token = await gateway.query(gateway.application.authenticate_run_token, key)
        return Principal(
            company_id=token.company_id,
            actor=Actor(type="agent", id=token.agent_id),
            run_id=token.run_id,
            issue_id=token.issue_id,
            run_bound=True,
        )
    admin_hash = gateway.settings.admin_key_hash
    if admin_hash is not None and hmac.compare_digest(hash_secret(key), admin_hash):
        return ADMIN
    record = await gateway.query(gateway.application.authenticate_key, key)
    actor_id = record.agent_id if record.kind == "agent" and record.agent_id else record.id
    return Principal(company_id=record.company_id, actor=Actor(type=record.kind, id=actor_id))  # type: ignore[arg-type]


async def _session(gateway: Gateway, session_id: str, method: str, csrf: str | None) -> Principal:
    application = gateway.application
    session, key = await gateway.query(application.authenticate_session, session_id)
    if method not in _SAFE_METHODS and not application.csrf_matches(session, csrf):
        raise ForbiddenError(
            f"Changes made with the session cookie need the {CSRF_HEADER} header "
            "(the csrfToken POST /api/session returned).",
            header=CSRF_HEADER,
        )
    return Principal(company_id=session.company_id, actor=Actor(type="board", id=key.id))


def check_run_headers(principal: Principal, headers: Any) -> None:
    """With a run token, ``X-Run-Id`` (alias ``X-Paperclip-Run-Id``) is optional and, when sent,
    must name the token's run (API.md).

    Raises:
        ForbiddenError: A header names another run.
    """
    if not principal.run_bound:
        return
    for name in RUN_HEADERS:
        value = headers.get(name)
        if value is not None and value.strip().lower() != str(principal.run_id).lower():
            raise ForbiddenError(
                f"This run token acts for run {principal.run_id}; {name} must name that run, "
                "or be left out.",
                header=name,
            )


def admin_only(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Guard: only the admin key passes."""
    principal: Principal = connection.user
    if principal.actor.type != "admin":
        raise ForbiddenError("Only the admin key (CLIPYARD_ADMIN_KEY) may do this.")


def not_agent(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Guard: admin and board keys pass; agent keys and run tokens do not."""
    principal: Principal = connection.user
    if principal.actor.type not in ("admin", "board"):
        raise ForbiddenError("Only the admin key or a board key may do this.")


def check_company(principal: Principal, company_id: str) -> None:
    """Raise ``CompanyNotFoundError`` unless the principal may see ``company_id``.

    The admin sees every company; any other key sees its own only (another company answers 404,
    so its existence is not revealed).
    """
    if principal.actor.type != "admin" and principal.company_id != company_id:
        raise CompanyNotFoundError(f"There is no company {company_id}.", companyId=company_id)
