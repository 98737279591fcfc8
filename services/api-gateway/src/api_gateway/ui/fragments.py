"""Fragment plumbing: a page handler answers the whole page, or one section of it.

Interface (kept stable; every page module uses it):

- ``render(page_session, template, fragments=..., fragment=..., **context)`` → a ``Template``
  response. ``fragments`` maps a fragment name to its partial template (``{"rows":
  "_workspace_rows.html"}``); with ``fragment=None`` the page template is rendered (it includes
  the same partials, so a section looks the same either way); with ``fragment="rows"`` only
  that partial is rendered. An unknown fragment name raises ``UnknownFragmentError`` (an HTML
  400; call ``check_fragment`` first to refuse it before loading data). Take the name from the
  query as
  ``fragment: Annotated[str | None, QueryParameter()] = None``.
- Every template gets ``page_session`` (``csrf_token``, ``company_id``, ``company_name``) and
  ``static_url`` (a global: ``static_url("app.css")`` → ``/static/app.css?v=<content hash>``).
- Convention for partials: the partial's outermost element carries ``data-fragment="<name>"``, so
  that ``refreshFragment("<name>")`` in ``actions.js`` can fetch ``?fragment=<name>`` and replace
  it in place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from litestar.response import Template

from api_gateway.domain import GatewayError
from api_gateway.ui.session import PageSession
from contracts.errors import ErrorCode

__all__ = ["UnknownFragmentError", "check_fragment", "render"]


class UnknownFragmentError(GatewayError):
    """``?fragment=`` names no section of this page."""

    code = ErrorCode.VALIDATION_FAILED


def check_fragment(fragment: str | None, fragments: Mapping[str, str] | None) -> str | None:
    """The partial template of ``fragment`` (None: the whole page); check it before loading data.

    Raises:
        UnknownFragmentError: ``fragment`` is not one of ``fragments``.
    """
    if fragment is None:
        return None
    known = fragments or {}
    if fragment not in known:
        listed = ", ".join(sorted(known)) or "none"
        raise UnknownFragmentError(
            f"This page has no fragment {fragment!r}; its fragments: {listed}.",
            fields=[{"field": "fragment", "message": "unknown fragment", "source": "query"}],
        )
    return known[fragment]


def render(
    page_session: PageSession | None,
    template: str,
    *,
    fragments: Mapping[str, str] | None = None,
    fragment: str | None = None,
    status_code: int = 200,
    **context: Any,
) -> Template:
    """Render a page, or one of its fragments.

    Args:
        page_session: The signed-in operator (None on the sign-in page).
        template: The page's template (it extends ``base.html``).
        fragments: Fragment name → partial template of this page.
        fragment: The requested fragment (``?fragment=``), None for the whole page.
        status_code: The response status.
        **context: The template's data.

    Returns:
        The template response (HTML; the router adds the security headers).

    Raises:
        UnknownFragmentError: ``fragment`` is not one of ``fragments``.
    """
    return Template(
        template_name=check_fragment(fragment, fragments) or template,
        context={"page_session": page_session, **context},
        status_code=status_code,
        media_type="text/html",
    )
