"""Security headers of every ``/api`` answer, set in one place (the app's ``before_send`` hook).

Some answers serve text that commands produced (a workspace operation's output, a runtime
service's log, a run's log) and are opened in the browser from the operator page. So that such
text can never be taken for a page or a script:

- every ``/api`` answer (errors and unknown paths too) carries ``X-Content-Type-Options: nosniff``;
- every ``text/plain`` answer under ``/api`` also carries ``Content-Security-Policy: sandbox``
  (opened as a document, it runs nothing and has no origin).

Headers a handler set itself are kept.
"""

from __future__ import annotations

from typing import Final

from litestar.enums import ScopeType
from litestar.types import Message, Scope

__all__ = ["API_HEADERS", "TEXT_HEADERS", "add_api_headers"]

API_HEADERS: Final[dict[str, str]] = {"X-Content-Type-Options": "nosniff"}
"""On every ``/api`` answer."""
TEXT_HEADERS: Final[dict[str, str]] = {"Content-Security-Policy": "sandbox"}
"""Also on a ``text/plain`` ``/api`` answer."""


def _is_api(path: str) -> bool:
    return path == "/api" or path.startswith("/api/")


async def add_api_headers(message: Message, scope: Scope) -> None:
    """``before_send`` hook: add :data:`API_HEADERS` (and :data:`TEXT_HEADERS` to ``text/plain``)
    to the start of every HTTP answer under ``/api``."""
    if message["type"] != "http.response.start" or scope["type"] != ScopeType.HTTP:
        return
    if not _is_api(str(scope.get("path", ""))):
        return
    headers = list(message.get("headers") or [])
    present = {bytes(name).lower() for name, _ in headers}
    content_type = next(
        (
            bytes(value).decode("latin-1")
            for name, value in headers
            if bytes(name).lower() == b"content-type"
        ),
        "",
    )
    wanted = dict(API_HEADERS)
    if content_type.split(";")[0].strip().lower() == "text/plain":
        wanted.update(TEXT_HEADERS)
    for name, value in wanted.items():
        key = name.lower().encode("latin-1")
        if key not in present:
            headers.append((key, value.encode("latin-1")))
    message["headers"] = headers
