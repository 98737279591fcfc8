"""The operator web page: server-rendered pages and their static files, served by the gateway.

``ui_router()`` builds the router of the pages (wired in ``api_gateway.app``); ``ui_static_router()``
serves ``/static/`` (public, cached); ``ui_template_config()`` is the app's Jinja configuration.

Page modules (``pages_*.py``) each export ``ROUTES``: their route handlers. The pages router:

- leaves the API's authentication out (``exclude_from_auth``): a page authenticates with the
  ``page_session`` dependency (``ui.session``) and redirects (303) to ``/sign-in`` without a session,
  while ``/api/*`` keeps answering 401 JSON;
- is excluded from the OpenAPI schema;
- adds the security headers of ``ui.headers`` to every answer;
- answers errors as HTML pages (``error.html``) with the API's status and sentence.
"""

from __future__ import annotations

import hashlib
import importlib
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from litestar import Request, Response, Router
from litestar.datastructures import CacheControlHeader
from litestar.di import Provide
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.response import Redirect, Template
from litestar.static_files import create_static_files_router
from litestar.template.config import TemplateConfig

from api_gateway.http.errors import BusReplyError, problem_of
from api_gateway.ui.headers import PAGE_HEADERS, add_page_headers
from api_gateway.ui.session import (
    PageTokens,
    SignInRequired,
    known_page_session,
    provide_page_session,
)
from contracts.errors import CodedError

__all__ = [
    "STATIC_DIR",
    "TEMPLATE_DIR",
    "is_web_url",
    "ui_router",
    "ui_static_router",
    "ui_template_config",
]

TEMPLATE_DIR: Final = Path(__file__).parent / "templates"
STATIC_DIR: Final = Path(__file__).parent / "static"

_PAGE_MODULES: Final = (
    "pages_sign_in",
    "pages_workspaces",
    "pages_workspace_detail",
    "pages_issues_list",
    "pages_issue",
    "pages_runs",
    "pages_run",
)


@cache
def _static_version(name: str) -> str:
    return hashlib.sha256((STATIC_DIR / name).read_bytes()).hexdigest()[:12]


def static_url(name: str) -> str:
    """The URL of a static file, with its content hash (so a changed file is fetched again)."""
    return f"/static/{name}?v={_static_version(name)}"


def when(moment: datetime | None) -> str:
    """A timestamp as the pages show it: ``2026-11-29 12:00:05 UTC`` (``—`` for none)."""
    if moment is None:
        return "—"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def is_web_url(value: object) -> bool:
    """Whether ``value`` may be a link's ``href``: an absolute ``http``/``https`` URL with a host
    and no whitespace or control characters (a service's URL is whatever its command reported;
    ``javascript:`` and friends are shown as text)."""
    if not isinstance(value, str) or not value or any(c <= " " or c == "\x7f" for c in value):
        return False
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


def ui_template_config() -> TemplateConfig[JinjaTemplateEngine]:
    """The app's templates: ``ui/templates``, Jinja with autoescape, ``static_url`` global,
    ``when`` filter and ``web_url`` test (``{% if url is web_url %}``)."""

    def register(engine: JinjaTemplateEngine) -> None:
        engine.engine.globals["static_url"] = static_url
        engine.engine.filters["when"] = when
        engine.engine.tests["web_url"] = is_web_url

    return TemplateConfig(
        directory=TEMPLATE_DIR, engine=JinjaTemplateEngine, engine_callback=register
    )


def _to_sign_in(request: Request[Any, Any, Any], exc: SignInRequired) -> Response[Any]:
    return Redirect("/sign-in", status_code=303, headers=dict(PAGE_HEADERS))


def _error_page(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    problem = problem_of(exc)
    return Template(
        template_name="error.html",
        context={"page_session": known_page_session(request), "problem": problem},
        status_code=problem.status,
        media_type="text/html",
        headers={**PAGE_HEADERS, "Cache-Control": "no-store"},
    )


def _page_routes() -> list[Any]:
    routes: list[Any] = []
    for module in _PAGE_MODULES:
        routes.extend(importlib.import_module(f"{__name__}.{module}").ROUTES)
    return routes


def ui_router() -> Router:
    """The router of the pages (one per app: it holds the CSRF tokens of its sessions)."""
    tokens = PageTokens()
    return Router(
        "/",
        route_handlers=_page_routes(),
        dependencies={
            "page_tokens": Provide(lambda: tokens, sync_to_thread=False, use_cache=True),
            "page_session": Provide(provide_page_session),
        },
        exception_handlers={
            SignInRequired: _to_sign_in,
            CodedError: _error_page,  # the gateway's errors and the libs' (403, 404)
            BusReplyError: _error_page,
        },
        after_request=add_page_headers,
        include_in_schema=False,
        opt={"exclude_from_auth": True},
    )


def ui_static_router() -> Router:
    """``/static/``: the page's CSS and JavaScript (public, no key, cached for an hour)."""
    return create_static_files_router(
        path="/static",
        directories=[STATIC_DIR],
        cache_control=CacheControlHeader(public=True, max_age=3600),
        after_request=add_page_headers,
        include_in_schema=False,
        opt={"exclude_from_auth": True},
        name="ui-static",
    )
