"""Swagger UI's files for ``/api/docs``, served by the gateway itself from the ``swagger-ui-py``
package: the docs render with no network beyond the gateway (Litestar's default loads them from a
CDN, and the page was blank offline).

Only the package's files are read, never its Python code (which wraps other frameworks); they are
read once, at their first request, and served with a day of caching: they change only with the
package's pinned version.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from typing import Final

from litestar import Response, get
from litestar.exceptions import NotFoundException
from litestar.params import FromPath

__all__ = ["ASSETS_PATH", "CSS_URL", "FAVICON", "JS_URL", "PRESET_URL", "docs_asset"]

ASSETS_PATH: Final = "/api/docs/assets"
"""Where the files are served."""

_FILES: Final = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui-standalone-preset.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}
"""The files the docs page loads, and their media types; nothing else of the package is served."""

FAVICON: Final = f"<link rel='icon' type='image/png' href='{ASSETS_PATH}/favicon-32x32.png'>"
"""The page's icon tag (Litestar's default points at a CDN too)."""


JS_URL: Final = f"{ASSETS_PATH}/swagger-ui-bundle.js"
CSS_URL: Final = f"{ASSETS_PATH}/swagger-ui.css"
PRESET_URL: Final = f"{ASSETS_PATH}/swagger-ui-standalone-preset.js"
"""The Swagger render plugin's asset URLs, all on the gateway."""


@cache
def _static_dir() -> Path:
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the swagger-ui-py package is missing: run ./dev install")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


@cache
def _read(name: str) -> bytes:
    return (_static_dir() / name).read_bytes()


@get(
    f"{ASSETS_PATH}/{{name:str}}",
    include_in_schema=False,
    opt={"exclude_from_auth": True},
    sync_to_thread=False,
)
def docs_asset(name: FromPath[str]) -> Response[bytes]:
    """One of Swagger UI's files (404 for any other name)."""
    media_type = _FILES.get(name)
    if media_type is None:
        raise NotFoundException(f"{name!r} is not a file of the API docs")
    return Response(
        _read(name), media_type=media_type, headers={"Cache-Control": "public, max-age=86400"}
    )
