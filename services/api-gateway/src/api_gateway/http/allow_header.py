"""``Allow`` says every method of a resource (API.md conventions: 405 carries ``Allow``).

Litestar answers ``OPTIONS`` and 405 with the methods of the one route it matched, and a resource
whose operations live in several controllers is several routes: ``OPTIONS /api/companies`` said
``POST`` only. :class:`AllowIndex` knows every documented operation by path (from the OpenAPI
document), and :meth:`AllowIndex.hook` (a ``before_send`` hook) rewrites ``Allow`` on an
``OPTIONS`` answer and on a 405 to all of them, plus ``OPTIONS``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from litestar.enums import ScopeType
from litestar.types import Message, Scope

__all__ = ["AllowIndex"]

_METHODS = ("get", "put", "post", "delete", "patch")


@dataclass(frozen=True)
class AllowIndex:
    """Documented path templates (as patterns) and their methods."""

    routes: tuple[tuple[re.Pattern[str], str], ...] = ()

    @classmethod
    def of(cls, doc: dict[str, Any]) -> AllowIndex:
        """The index of the operations of the OpenAPI document ``doc`` (plain data)."""
        routes: list[tuple[re.Pattern[str], str]] = []
        for path, item in (doc.get("paths") or {}).items():
            methods = sorted(m.upper() for m in _METHODS if item.get(m) is not None)
            pattern = re.escape(path)
            pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", pattern)
            routes.append((re.compile(f"^{pattern}/?$"), ", ".join([*methods, "OPTIONS"])))
        return cls(tuple(routes))

    def allowed(self, path: str) -> str | None:
        """The ``Allow`` value of ``path`` (None: no documented resource)."""
        return next((allow for pattern, allow in self.routes if pattern.match(path)), None)

    @staticmethod
    def concerns(message: Message, scope: Scope) -> bool:
        """Whether ``message`` starts an ``OPTIONS`` answer or a 405: the ones given ``Allow``."""
        if message["type"] != "http.response.start" or scope["type"] != ScopeType.HTTP:
            return False
        return scope.get("method") == "OPTIONS" or message.get("status") == 405

    async def hook(self, message: Message, scope: Scope) -> None:
        """``before_send``: on an ``OPTIONS`` answer or a 405, ``Allow`` lists every method."""
        if not self.concerns(message, scope) or message["type"] != "http.response.start":
            return
        allow = self.allowed(str(scope.get("path", "")))
        if allow is None:
            return
        headers: list[Any] = [
            (name, value)
            for name, value in message.get("headers") or []
            if bytes(name).lower() != b"allow"
        ]
        headers.append((b"allow", allow.encode("latin-1")))
        message["headers"] = headers
