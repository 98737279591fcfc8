"""Page authentication: the session cookie → principal + CSRF token + company, or a 303 to sign-in.

Interface (kept stable; other page modules build on it):

- ``PageSession``: what a page handler gets as its ``page_session`` dependency (``principal``,
  ``csrf_token``, ``company_id``, ``company_name``). Declare it as
  ``page_session: NamedDependency[PageSession]``; the router provides it (``provide_page_session``).
  Without a valid session the dependency raises ``SignInRequired``, which the router answers with
  a 303 redirect to ``/sign-in``.
- ``PageTokens``: the CSRF token of a session, for ``<meta name="csrf-token">``. The store keeps
  only hashes, but a session's token is derived from its id (``domain.csrf_token_of``), so any
  live session's token can be rendered again, after a gateway restart too (``remember`` and
  ``forget`` are kept for the callers and do nothing).
- ``SESSION_COOKIE_PATH``: the page's session cookie covers the whole site (``/``), so that pages,
  the JSON API and the event stream all see it.
- ``session_cookies``: the cookies a sign-in or sign-out sets: the session cookie on ``/`` and an
  expired ``clipyard_session`` on the old path ``/api`` (``LEGACY_COOKIE_PATH``), so a session
  cookie an older gateway set there cannot outlive a sign-out or shadow the new one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from litestar import Request
from litestar.datastructures import Cookie
from litestar.di import NamedDependency

from api_gateway.domain import UnauthenticatedError, csrf_token_of
from api_gateway.http.dependencies import Gateway
from api_gateway.http.security import SESSION_COOKIE
from contracts.base import Actor, Principal

__all__ = [
    "LEGACY_COOKIE_PATH",
    "SESSION_COOKIE_PATH",
    "PageSession",
    "PageTokens",
    "SignInRequired",
    "known_page_session",
    "provide_page_session",
    "session_cookie",
    "session_cookies",
]

SESSION_COOKIE_PATH: Final = "/"
LEGACY_COOKIE_PATH: Final = "/api"
"""Where older gateways set the session cookie; every sign-in and sign-out expires it there."""
_STATE_KEY: Final = "ui_page_session"


class SignInRequired(Exception):
    """No valid session: the router answers 303 ``/sign-in``."""


@dataclass(frozen=True)
class PageSession:
    """The signed-in operator of a page request."""

    principal: Principal
    """A board principal of the session's key, ``via_session`` (a board session to the access
    model); what bus queries are sent as."""
    csrf_token: str
    """The session's CSRF token (rendered in ``<meta name="csrf-token">``)."""
    company_id: str
    company_name: str


class PageTokens:
    """The CSRF token of a page's session (derived from the session id; nothing is kept)."""

    def remember(self, session_id: str, csrf_token: str, expires_at: datetime) -> None:
        """Nothing to keep: the token is derived from the session id."""

    def token(self, session_id: str) -> str | None:
        """The session's CSRF token (whether the session is live is checked by the caller)."""
        return csrf_token_of(session_id)

    def forget(self, session_id: str) -> None:
        """Nothing to drop."""


def session_cookie(gateway: Gateway, value: str, max_age: int) -> Cookie:
    """The page's ``clipyard_session`` cookie (HttpOnly, SameSite=Strict, path ``/``)."""
    return Cookie(
        key=SESSION_COOKIE,
        value=value,
        path=SESSION_COOKIE_PATH,
        max_age=max_age,
        httponly=True,
        samesite="strict",
        secure=gateway.settings.session_cookie_secure,
    )


def session_cookies(gateway: Gateway, value: str, max_age: int) -> list[Cookie]:
    """The cookies of a sign-in (``value``, ``max_age``) or a sign-out (``""``, ``0``): the
    session cookie on ``/`` and an expired one on :data:`LEGACY_COOKIE_PATH`."""
    legacy = Cookie(
        key=SESSION_COOKIE,
        value="",
        path=LEGACY_COOKIE_PATH,
        max_age=0,
        httponly=True,
        samesite="strict",
        secure=gateway.settings.session_cookie_secure,
    )
    return [session_cookie(gateway, value, max_age), legacy]


async def provide_page_session(
    request: Request[Any, Any, Any],
    gateway: NamedDependency[Gateway],
    page_tokens: NamedDependency[PageTokens],
) -> PageSession:
    """The page's session, from the ``clipyard_session`` cookie.

    Raises:
        SignInRequired: No cookie, an unknown, ended or expired session, a revoked key, or a
            session whose CSRF token this gateway does not hold.
    """
    session_id = request.cookies.get(SESSION_COOKIE)
    if not session_id:
        raise SignInRequired
    app = gateway.application
    try:
        session, key = await gateway.query(app.authenticate_session, session_id)
    except UnauthenticatedError as exc:
        raise SignInRequired from exc
    csrf = page_tokens.token(session_id)
    if csrf is None or not app.csrf_matches(session, csrf):
        raise SignInRequired
    company = await gateway.query(app.company, session.company_id)
    page_session = PageSession(
        principal=Principal(
            company_id=session.company_id,
            actor=Actor(type="board", id=key.id),
            via_session=True,
        ),
        csrf_token=csrf,
        company_id=company.id,
        company_name=company.name,
    )
    request.state[_STATE_KEY] = page_session  # the error page keeps the navigation
    return page_session


def known_page_session(request: Request[Any, Any, Any]) -> PageSession | None:
    """The page session this request already authenticated (None: not, or not yet)."""
    found = request.state.get(_STATE_KEY)
    return found if isinstance(found, PageSession) else None
