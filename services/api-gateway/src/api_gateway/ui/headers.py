"""Security headers of the page and its static files (CSP without inline scripts or styles).

Interface: ``PAGE_HEADERS`` (a name → value mapping) and ``add_page_headers`` (an
``after_request`` hook the UI router and the static router install). Templates must therefore
never use inline ``<script>``, ``on*=`` attributes or ``style=`` attributes: data for scripts goes
in ``data-*`` attributes or ``<script type="application/json">``, styles in ``/static/app.css``.
"""

from __future__ import annotations

from typing import Any, Final

from litestar import Response

__all__ = ["CONTENT_SECURITY_POLICY", "PAGE_HEADERS", "add_page_headers"]

CONTENT_SECURITY_POLICY: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; "
    "object-src 'none'"
)

PAGE_HEADERS: Final[dict[str, str]] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def add_page_headers(response: Response[Any]) -> Response[Any]:
    """``after_request`` hook: set the page's security headers (pages are never cached)."""
    for name, value in PAGE_HEADERS.items():
        response.headers[name] = value
    response.headers.setdefault("Cache-Control", "no-store")
    return response
