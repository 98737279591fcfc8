"""``/api/session``: the operator page exchanges a board key for a session cookie, and signs out.

The cookie is ``ui.session``'s (path ``/``); sign-in and sign-out also expire the one older
gateways set on ``/api``.
"""

from __future__ import annotations

import hmac
from typing import Any, Final

from litestar import Controller, Request, Response, delete, post
from litestar.di import NamedDependency
from litestar.params import JSONBody

from api_gateway.controllers.common import error_responses
from api_gateway.domain import (
    ForbiddenError,
    KeyKindNotAllowedError,
    UnauthenticatedError,
    hash_secret,
)
from api_gateway.http.dependencies import Gateway
from api_gateway.http.security import CSRF_HEADER, SESSION_COOKIE
from api_gateway.ui.session import session_cookies
from contracts.base import Actor, Principal
from contracts.http import SignedIn, SignIn

__all__ = ["SessionController"]

_PUBLIC: Final[dict[str, bool]] = {"exclude_from_auth": True}


class SessionController(Controller):
    """Sessions of the operator page (HttpOnly, SameSite=Strict cookie + CSRF token)."""

    path = "/api/session"
    tags = ["sessions"]

    @post(
        "/",
        operation_id="signIn",
        status_code=200,
        opt=_PUBLIC,
        security=[{}],
        responses=error_responses("key_kind_not_allowed", "unauthenticated", public=True),
    )
    async def sign_in(
        self, data: JSONBody[SignIn], gateway: NamedDependency[Gateway]
    ) -> Response[SignedIn]:
        """Exchange a board key for the ``clipyard_session`` cookie and a CSRF token.

        Send the token as ``X-CSRF-Token`` on every change made with the cookie. Errors: 400
        ``validation_failed``/``invalid_json``; 401 ``unauthenticated`` (unknown or revoked key);
        422 ``key_kind_not_allowed`` (not a board key).
        """
        admin_hash = gateway.settings.admin_key_hash
        if admin_hash is not None and hmac.compare_digest(hash_secret(data.key), admin_hash):
            raise KeyKindNotAllowedError(
                "Sign in with a board key, not the admin key.", field="key"
            )
        app = gateway.application
        key = await gateway.query(app.authenticate_key, data.key)
        principal = Principal(company_id=key.company_id, actor=Actor(type="board", id=key.id))
        ttl = gateway.settings.session_ttl
        started = await gateway.act(principal, app.start_session, data.key, ttl)
        return Response(
            SignedIn(csrf_token=started.csrf_token, company_id=started.company_id),
            cookies=session_cookies(gateway, started.session_id, int(ttl)),
        )

    @delete(
        "/",
        operation_id="signOut",
        opt=_PUBLIC,
        security=[{}],
        responses=error_responses("forbidden", public=True),
    )
    async def sign_out(
        self, request: Request[Any, Any, Any], gateway: NamedDependency[Gateway]
    ) -> Response[None]:
        """Sign out: end the session and clear the cookie (without a live session, only clear it).

        Errors: 403 ``forbidden`` (a live session without its ``X-CSRF-Token`` header).
        """
        if session_id := request.cookies.get(SESSION_COOKIE):
            app = gateway.application
            try:
                session, key = await gateway.query(app.authenticate_session, session_id)
            except UnauthenticatedError:
                pass
            else:
                if not app.csrf_matches(session, request.headers.get(CSRF_HEADER)):
                    raise ForbiddenError(
                        f"Signing out needs the {CSRF_HEADER} header "
                        "(the csrfToken POST /api/session returned).",
                        header=CSRF_HEADER,
                    )
                principal = Principal(
                    company_id=key.company_id, actor=Actor(type="board", id=key.id)
                )
                await gateway.act(principal, app.end_session, session_id)
        return Response(None, status_code=204, cookies=session_cookies(gateway, "", 0))
