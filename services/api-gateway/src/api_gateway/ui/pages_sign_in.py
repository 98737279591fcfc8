"""Signing in and out of the operator page, and ``/``.

``POST /sign-in`` takes the board key in the request body: JSON ``{key}`` from ``sign-in.js``
(answered with JSON: ``{next}``, or the API's error body with the field named), or the form's
``key`` field without JavaScript (answered with a 303, or the form again with the API's message).
It starts the session as ``POST /api/session`` does, sets the HttpOnly ``clipyard_session`` cookie
for the whole site and remembers the CSRF token for the pages' ``<meta name="csrf-token">``. The key
is never logged, echoed or put in a URL. ``POST /sign-out`` needs the session's CSRF token (the
form's ``csrfToken`` field or the ``X-CSRF-Token`` header).
"""

from __future__ import annotations

import hmac
from typing import Any, Final
from urllib.parse import urlsplit

import msgspec
from litestar import Request, Response, get, post
from litestar.di import NamedDependency
from litestar.response import Redirect

from api_gateway.domain import (
    ForbiddenError,
    GatewayError,
    KeyKindNotAllowedError,
    UnauthenticatedError,
    hash_secret,
)
from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import problem_of
from api_gateway.http.security import CSRF_HEADER, SESSION_COOKIE
from api_gateway.ui.fragments import render
from api_gateway.ui.session import (
    PageTokens,
    SignInRequired,
    provide_page_session,
    session_cookies,
)
from contracts.base import Actor, Principal
from contracts.errors import ErrorCode
from contracts.http import ErrorBody

__all__ = ["ROUTES", "home", "sign_in", "sign_in_page", "sign_out"]

_HOME: Final = "/workspaces"
_FORM_TYPES: Final = ("application/x-www-form-urlencoded", "multipart/form-data")


class _KeyMissingError(GatewayError):
    """No key was posted."""

    code = ErrorCode.VALIDATION_FAILED


async def _signed_in(request: Request[Any, Any, Any], gateway: Gateway, tokens: PageTokens) -> bool:
    try:
        await provide_page_session(request, gateway, tokens)
    except SignInRequired:
        return False
    return True


@get("/")
async def home(
    request: Request[Any, Any, Any],
    gateway: NamedDependency[Gateway],
    page_tokens: NamedDependency[PageTokens],
) -> Redirect:
    """``/``: the workspaces when signed in, else the sign-in page."""
    signed_in = await _signed_in(request, gateway, page_tokens)
    return Redirect(_HOME if signed_in else "/sign-in", status_code=303)


@get("/sign-in")
async def sign_in_page(
    request: Request[Any, Any, Any],
    gateway: NamedDependency[Gateway],
    page_tokens: NamedDependency[PageTokens],
) -> Response[Any]:
    """The sign-in form (a signed-in operator goes on to the workspaces)."""
    if await _signed_in(request, gateway, page_tokens):
        return Redirect(_HOME, status_code=303)
    return render(None, "sign_in.html", error=None)


def _same_origin(request: Request[Any, Any, Any]) -> bool:
    """Refuse sign-ins posted from another site (login CSRF)."""
    if request.headers.get("sec-fetch-site") == "cross-site":
        return False
    origin = request.headers.get("origin")
    return origin is None or urlsplit(origin).netloc == request.headers.get("host", "")


async def _key_of(request: Request[Any, Any, Any]) -> tuple[str, bool]:
    """The posted key and whether it came from the no-JavaScript form."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type in _FORM_TYPES:
        form = await request.form()
        value = form.get("key")
        return (value if isinstance(value, str) else ""), True
    try:
        body = msgspec.json.decode(await request.body())
    except msgspec.DecodeError:
        body = None
    key = body.get("key") if isinstance(body, dict) else None
    return (key if isinstance(key, str) else ""), False


async def _start(gateway: Gateway, tokens: PageTokens, key: str) -> str:
    """Start a session for a board key (as ``POST /api/session``); return its cookie value."""
    if not key.strip():
        raise _KeyMissingError(
            "Enter a board key.", fields=[{"field": "key", "message": "required"}]
        )
    admin_hash = gateway.settings.admin_key_hash
    if admin_hash is not None and hmac.compare_digest(hash_secret(key), admin_hash):
        raise KeyKindNotAllowedError("Sign in with a board key, not the admin key.", field="key")
    app = gateway.application
    record = await gateway.query(app.authenticate_key, key)
    principal = Principal(company_id=record.company_id, actor=Actor(type="board", id=record.id))
    started = await gateway.act(principal, app.start_session, key, gateway.settings.session_ttl)
    tokens.remember(started.session_id, started.csrf_token, started.expires_at)
    return started.session_id


def _refusal(exc: Exception, from_form: bool) -> Response[Any]:
    problem = problem_of(exc)
    if from_form:
        return render(None, "sign_in.html", error=problem.message, status_code=problem.status)
    details = dict(problem.details)
    details.setdefault("fields", [{"field": "key", "message": problem.message, "source": "body"}])
    body = ErrorBody(error=problem.message, code=problem.code, details=details)
    return Response(body, status_code=problem.status, media_type="application/json")


@post("/sign-in", status_code=200)
async def sign_in(
    request: Request[Any, Any, Any],
    gateway: NamedDependency[Gateway],
    page_tokens: NamedDependency[PageTokens],
) -> Response[Any]:
    """Exchange the posted board key for the session cookie."""
    key, from_form = await _key_of(request)
    try:
        if not _same_origin(request):
            raise ForbiddenError("Sign in from the Clipyard page itself.")
        session_id = await _start(gateway, page_tokens, key)
    except GatewayError as exc:
        return _refusal(exc, from_form)
    finally:
        del key
    cookies = session_cookies(gateway, session_id, int(gateway.settings.session_ttl))
    if from_form:
        return Redirect(_HOME, status_code=303, cookies=cookies)
    return Response({"next": _HOME}, cookies=cookies, media_type="application/json")


async def _csrf_of(request: Request[Any, Any, Any]) -> str | None:
    if (header := request.headers.get(CSRF_HEADER)) is not None:
        return header
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type in _FORM_TYPES:
        value = (await request.form()).get("csrfToken")
        return value if isinstance(value, str) else None
    return None


@post("/sign-out", status_code=303)
async def sign_out(
    request: Request[Any, Any, Any],
    gateway: NamedDependency[Gateway],
    page_tokens: NamedDependency[PageTokens],
) -> Response[Any]:
    """End the session (CSRF-checked) and clear the cookie; then the sign-in page."""
    session_id = request.cookies.get(SESSION_COOKIE)
    if session_id:
        app = gateway.application
        try:
            session, key = await gateway.query(app.authenticate_session, session_id)
        except UnauthenticatedError:
            pass
        else:
            if not app.csrf_matches(session, await _csrf_of(request)):
                raise ForbiddenError(
                    f"Signing out needs the session's CSRF token ({CSRF_HEADER}); reload the page."
                )
            principal = Principal(company_id=key.company_id, actor=Actor(type="board", id=key.id))
            await gateway.act(principal, app.end_session, session_id)
        page_tokens.forget(session_id)
    return Redirect("/sign-in", status_code=303, cookies=session_cookies(gateway, "", 0))


ROUTES: Final[list[Any]] = [home, sign_in_page, sign_in, sign_out]
