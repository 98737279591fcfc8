"""Authentication (Bearer key or session cookie + CSRF), the admin guard, company scoping.

Every route needs a principal unless it opts out with ``opt={"exclude_from_auth": True}`` (health,
sign-in/out, the OpenAPI document and docs). Missing, unknown or revoked keys answer 401 with a
sentence saying what to do; a board key asking about another company gets 404, as if the company
did not exist (API.md).
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any, Final

from litestar.connection import ASGIConnection
from litestar.middleware import AbstractAuthenticationMiddleware, AuthenticationResult

from api_gateway.application import CompanyNotFoundError
from api_gateway.dependencies import ADMIN
from api_gateway.domain import ForbiddenError, UnauthenticatedError, hash_secret
from contracts.base import Actor, Principal

if TYPE_CHECKING:
    from litestar.handlers.base import BaseRouteHandler

    from api_gateway.dependencies import Gateway

__all__ = [
    "CSRF_HEADER",
    "SESSION_COOKIE",
    "AuthenticationMiddleware",
    "admin_only",
    "check_company",
    "not_agent",
]

SESSION_COOKIE: Final = "clipyard_session"
CSRF_HEADER: Final = "X-CSRF-Token"
_SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})


class AuthenticationMiddleware(AbstractAuthenticationMiddleware):
    """Find the principal of a request: ``Authorization: Bearer <key>``, else the session cookie."""

    async def authenticate_request(
        self, connection: ASGIConnection[Any, Any, Any, Any]
    ) -> AuthenticationResult:
        """Authenticate, or raise ``UnauthenticatedError`` / ``ForbiddenError`` (CSRF)."""
        gateway: Gateway = connection.app.state.gateway
        if (header := connection.headers.get("authorization")) is not None:
            return AuthenticationResult(await _bearer(gateway, header), "key")
        if session_id := connection.cookies.get(SESSION_COOKIE):
            return AuthenticationResult(await _session(gateway, session_id, connection), "session")
        raise UnauthenticatedError(
            "This request needs a key: send 'Authorization: Bearer <key>' with the admin key "
            "(CLIPYARD_ADMIN_KEY) or a board key, or sign in with POST /api/session."
        )


async def _bearer(gateway: Gateway, header: str) -> Principal:
    scheme, _, key = header.partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        raise UnauthenticatedError(
            "The Authorization header must be 'Bearer <key>'.", header="Authorization"
        )
    admin_hash = gateway.settings.admin_key_hash
    if admin_hash is not None and hmac.compare_digest(hash_secret(key), admin_hash):
        return ADMIN
    record = await gateway.query(gateway.application.authenticate_key, key)
    actor_id = record.agent_id if record.kind == "agent" and record.agent_id else record.id
    return Principal(company_id=record.company_id, actor=Actor(type=record.kind, id=actor_id))  # type: ignore[arg-type]


async def _session(
    gateway: Gateway, session_id: str, connection: ASGIConnection[Any, Any, Any, Any]
) -> Principal:
    application = gateway.application
    session, key = await gateway.query(application.authenticate_session, session_id)
    if connection.scope.get("method", "GET") not in _SAFE_METHODS and not application.csrf_matches(
        session, connection.headers.get(CSRF_HEADER)
    ):
        raise ForbiddenError(
            f"Changes made with the session cookie need the {CSRF_HEADER} header "
            "(the csrfToken POST /api/session returned).",
            header=CSRF_HEADER,
        )
    return Principal(company_id=session.company_id, actor=Actor(type="board", id=key.id))


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
