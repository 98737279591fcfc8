"""Authentication (Bearer key or session cookie + CSRF), the access guard, company scoping.

Every route needs a principal unless it opts out with ``opt={"exclude_from_auth": True}`` (health,
sign-in/out, the OpenAPI document and docs). Missing, unknown or revoked keys answer 401 with a
sentence saying what to do; a board key asking about another company gets 404, as if the company
did not exist (API.md).

Every other route declares the resource it acts on and the action, ``opt=access(Resource.ISSUE,
Action.READ)``; :func:`access_guard`, the app's one guard, asks the access model
(``servicekit.access``, ARCHITECTURE §5.1) whether the principal's kind reaches it, and answers 403
``forbidden`` naming who may otherwise. The owning service checks the company of what it holds and
the *own* rules.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from litestar.connection import ASGIConnection
from litestar.middleware import AbstractAuthenticationMiddleware, AuthenticationResult

from api_gateway.domain import (
    CompanyNotFoundError,
    ForbiddenError,
    UnauthenticatedError,
    hash_secret,
    is_run_token,
)
from api_gateway.http.dependencies import ADMIN
from contracts.base import Actor, Principal
from servicekit.access import Access, AccessDeniedError, Action, ActorKind, Resource

if TYPE_CHECKING:
    from litestar.handlers.base import BaseRouteHandler
    from litestar.types import Method

    from api_gateway.http.dependencies import Gateway

__all__ = [
    "ACCESS_OPT",
    "CSRF_HEADER",
    "KIND_HINTS",
    "PUBLIC_OPT",
    "RESOURCE_HINTS",
    "SESSION_COOKIE",
    "UNAUTHENTICATED_METHODS",
    "AccessDeclarationMissingError",
    "AuthenticationMiddleware",
    "Credential",
    "access",
    "access_guard",
    "admin_only",
    "authenticate",
    "check_company",
    "check_run_headers",
    "declared_access",
]

SESSION_COOKIE: Final = "clipyard_session"
CSRF_HEADER: Final = "X-CSRF-Token"
_SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
RUN_HEADERS: Final = ("X-Run-Id", "X-Paperclip-Run-Id")
ACCESS_OPT: Final = "access"
"""The route option holding a route's ``(Resource, Action)`` (set with :func:`access`)."""
PUBLIC_OPT: Final = "exclude_from_auth"
"""The route option of the routes that need no key (the middleware and the guard skip them)."""
UNAUTHENTICATED_METHODS: Final[frozenset[Method]] = frozenset({"OPTIONS"})
"""The methods the authentication middleware leaves alone (Litestar's answer to ``OPTIONS``: the
allowed methods), so the guard does too."""

RESOURCE_HINTS: Final[dict[Resource, str]] = {
    Resource.EVENT_STREAM: (
        "The company's event stream carries the events of every issue, agent and run of the "
        "company, not only this agent's; follow your own work with GET /api/runs/{runId}, "
        "GET /api/runs/{runId}/log, GET /api/issues/{issueId}/heartbeat-context and "
        "GET /api/execution-workspaces/{id}/events instead."
    ),
}
"""What to use instead, added to a refusal of the resource (ARCHITECTURE §5.1)."""

KIND_HINTS: Final[dict[ActorKind, str]] = {
    ActorKind.ADMIN: (
        "The admin key manages companies, their keys and secrets; use a board key of the "
        "company for the rest."
    ),
}
"""What to do instead, added to a refusal of the actor kind."""


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
        token = gateway.lookup(gateway.application.authenticate_run_token, key)
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
    record = gateway.lookup(gateway.application.authenticate_key, key)
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
    return Principal(
        company_id=session.company_id, actor=Actor(type="board", id=key.id), via_session=True
    )


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
    """Guard: only the admin key passes (listing every company; the access model lets a board key
    read its own company, so this guard stays)."""
    principal: Principal = connection.user
    if principal.actor.type != "admin":
        raise ForbiddenError(
            "Only the admin key (CLIPYARD_ADMIN_KEY) may list every company; read your own "
            "with GET /api/companies/{companyId}."
        )


def access(resource: Resource, action: Action) -> dict[str, tuple[Resource, Action]]:
    """The route option declaring what a route acts on: ``@get(..., opt=access(R, A))``."""
    return {ACCESS_OPT: (resource, action)}


class AccessDeclarationMissingError(RuntimeError):
    """A route that needs a key declares no ``(Resource, Action)``: a bug, answered 500 (the
    gateway's tests fail on it first)."""


def declared_access(route_handler: BaseRouteHandler) -> tuple[Resource, Action] | None:
    """The ``(Resource, Action)`` a route declares; None for a public route.

    Raises:
        AccessDeclarationMissingError: The route needs a key and declares nothing.
    """
    if route_handler.opt.get(PUBLIC_OPT):
        return None
    declared = route_handler.opt.get(ACCESS_OPT)
    if declared is None:
        raise AccessDeclarationMissingError(
            f"The route {route_handler.handler_name} declares no access; give it "
            "opt=access(Resource..., Action...)."
        )
    resource, action = declared
    return Resource(resource), Action(action)


async def access_guard(
    connection: ASGIConnection[Any, Any, Any, Any], route_handler: BaseRouteHandler
) -> None:
    """The app's guard: the principal's kind must reach the route's resource and action.

    A coroutine, so that Litestar calls it on the loop (a plain function would cost every request
    a hop to a worker thread).

    Public routes (and ``OPTIONS``) pass. A refusal is 403 ``forbidden`` with the model's message (who may) and,
    where :data:`RESOURCE_HINTS` or :data:`KIND_HINTS` has one, what to use instead; a key of no
    company (other than the admin's) is refused too.

    Raises:
        AccessDeniedError: The kind may not do this.
        AccessDeclarationMissingError: The route declares nothing (a bug).
    """
    if connection.scope.get("method") in UNAUTHENTICATED_METHODS:
        return  # Litestar's OPTIONS answer (the allowed methods): no principal, nothing to guard
    declared = declared_access(route_handler)
    if declared is None:
        return
    resource, action = declared
    actor = Access.of(connection.user)
    try:
        actor.reach(resource, action)
    except AccessDeniedError as exc:
        hints = [
            hint for hint in (RESOURCE_HINTS.get(resource), KIND_HINTS.get(actor.kind)) if hint
        ]
        if not hints:
            raise
        raise AccessDeniedError(" ".join([str(exc), *hints]), **exc.details) from None
    actor.scope()


def check_company(principal: Principal, company_id: str) -> None:
    """Raise ``CompanyNotFoundError`` unless the principal may see ``company_id``
    (``Access.sees_company``).

    The admin sees every company; any other key sees its own only (another company answers 404,
    so its existence is not revealed).
    """
    if not Access.of(principal).sees_company(company_id):
        raise CompanyNotFoundError(f"There is no company {company_id}.", companyId=company_id)
