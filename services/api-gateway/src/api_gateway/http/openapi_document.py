"""The OpenAPI document's configuration and its routes: ``/api/openapi.json`` and ``/api/docs``
serve the document :mod:`api_gateway.http.openapi_strict` corrects once, at its first use
(:func:`~api_gateway.http.openapi_strict.corrected_document`), whose operations are indexed for
``Allow`` (:mod:`api_gateway.http.allow_header`) when the first answer needs it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Final

from litestar import Litestar, Request, Router, get
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme, Tag
from litestar.types import Message, Scope

from api_gateway.http.allow_header import AllowIndex
from api_gateway.http.docs_assets import CSS_URL, FAVICON, JS_URL, PRESET_URL
from api_gateway.http.openapi_strict import (
    StrictJsonRenderPlugin,
    StrictSwaggerRenderPlugin,
    corrected_document,
)
from api_gateway.settings import SERVICE_VERSION
from contracts.errors import CATALOGUE

__all__ = ["allow_header", "openapi_config", "openapi_json", "warm_up_later"]

log = logging.getLogger(__name__)

WARM_AFTER: Final = 2.0
"""Seconds after start at which the document is built ahead of its first use, in a worker
thread: late enough to leave the start its CPU, early enough that a first reader rarely waits."""

_ALLOW_STATE = "allow"

_DESCRIPTION = (
    "Clipyard's HTTP API. Send `Authorization: Bearer <key>` (the admin key, a board key, an "
    "agent key, or a run's token `cyr_...`) on every request except health, these docs and the "
    "session sign-in. Errors are "
    '`{"error", "code", "details"}`; every code, with its status: '
    + "; ".join(
        f"`{code.value}` ({entry.status}): {entry.description}" for code, entry in CATALOGUE.items()
    )
    + ". Each operation lists the codes it may answer."
)


@get(
    "/api/openapi.json",
    include_in_schema=False,
    opt={"exclude_from_auth": True},
    media_type="application/vnd.oai.openapi+json",
    sync_to_thread=True,  # the first call builds the document: off the loop
)
def openapi_json(request: Request[Any, Any, Any]) -> dict[str, Any]:
    """The OpenAPI document (no key needed), as :mod:`api_gateway.http.openapi_strict` corrects it."""
    return corrected_document(request.app)


def openapi_config() -> OpenAPIConfig:
    """The OpenAPI configuration: the title, the error catalogue, bearer security, the tags."""
    return OpenAPIConfig(
        title="Clipyard API",
        version=SERVICE_VERSION,
        description=_DESCRIPTION,
        openapi_router=Router(
            "/api/docs",
            route_handlers=[],
            include_in_schema=False,
            opt={"exclude_from_auth": True},
        ),
        render_plugins=[
            StrictSwaggerRenderPlugin(
                path="/",
                js_url=JS_URL,
                css_url=CSS_URL,
                standalone_preset_js_url=PRESET_URL,
                favicon=FAVICON,
            ),
            StrictJsonRenderPlugin(path="/openapi.json"),
        ],
        use_handler_docstrings=True,
        components=Components(
            security_schemes={
                "bearer": SecurityScheme(
                    type="http",
                    scheme="bearer",
                    description="An admin, board or agent key, or a run token (`cyr_...`).",
                )
            }
        ),
        security=[{"bearer": []}],
        tags=[
            Tag(name="companies"),
            Tag(name="api-keys"),
            Tag(name="sessions"),
            Tag(name="projects"),
            Tag(name="project-workspaces"),
            Tag(name="issues"),
            Tag(name="execution-workspaces"),
            Tag(name="runtime-services"),
            Tag(name="secrets"),
            Tag(name="agents"),
            Tag(name="runs"),
        ],
    )


def _allow_index(app: Litestar) -> AllowIndex:
    """The ``Allow`` index of the corrected document, built at its first use and kept."""
    index: AllowIndex | None = app.state.get(_ALLOW_STATE)
    if index is None:
        index = AllowIndex.of(corrected_document(app))
        app.state[_ALLOW_STATE] = index
    return index


async def allow_header(message: Message, scope: Scope) -> None:
    """``before_send``: ``Allow`` with every documented method on an ``OPTIONS`` answer or a 405
    (the first of them builds the document, off the loop)."""
    if not AllowIndex.concerns(message, scope):
        return
    app: Litestar = scope["app"]
    index: AllowIndex | None = app.state.get(_ALLOW_STATE)
    if index is None:
        index = await asyncio.to_thread(_allow_index, app)
    await index.hook(message, scope)


def warm_up_later(app: Litestar) -> None:
    """``on_startup``: build the document and its ``Allow`` index in a worker thread
    :data:`WARM_AFTER` seconds from now, so that neither the start nor a first reader pays for
    it (a reader before then builds it, once, under the document's lock)."""
    loop = asyncio.get_running_loop()
    loop.call_later(WARM_AFTER, lambda: loop.run_in_executor(None, _warm, app))


def _warm(app: Litestar) -> None:
    try:
        _allow_index(app)
    except Exception:  # the first reader builds it again, and fails visibly
        log.exception("the OpenAPI document could not be built ahead of its first use")
