"""The edge's own checks of what a client sends, before any service sees it (docs/design/API.md,
"Errors" under its conventions).

:func:`input_guard` is an app guard (it runs after routing, before the handler decodes its body):

- an API path parameter naming an id (``…_id``) must be a UUID: anything else cannot name a record,
  so it is answered 404 ``not_found`` naming the parameter (``../../etc`` never reaches a service);
- no text the client sends (path and query parameters, and every key and string of a JSON body)
  may hold a NUL byte or another control character but tab, line feed and carriage return: 400
  ``validation_failed`` naming the field (``runtimeConfig.services[0].command``), never a 500
  from a path or a subprocess further in;
- a time (a body field named ``…At``) is an ISO 8601 string: a number (which the decoder would
  read as seconds since 1970) is 400 naming the field.

A body that is not JSON is left to the handler (``invalid_json``), one over the limit answers 413
when it is read here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Final

import msgspec
from litestar.connection import ASGIConnection
from litestar.exceptions import ValidationException
from litestar.handlers.base import BaseRouteHandler

from api_gateway.domain import NotFoundError

__all__ = ["UUID_PATTERN", "control_character_at", "input_guard", "number_time_at"]

UUID_PATTERN: Final = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?!\n)$"
)
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_BODY_METHODS: Final = frozenset({"POST", "PUT", "PATCH"})
_SHOWN: Final = 60


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.capitalize() for part in rest)


_MAX_DEPTH: Final = 64
"""How deep a body may nest (deeper is 400: no request needs more)."""


class _TooDeepError(Exception):
    """A body nests deeper than :data:`_MAX_DEPTH`."""


def _fields(value: Any, where: str = "") -> Iterator[tuple[str, str | None, Any]]:
    """Every value of plain JSON data with its field path and the key that holds it (keys are
    yielded too, as strings of their own path, with no key); iterative, so a deep body costs
    no more than a flat one.

    Raises:
        _TooDeepError: It nests deeper than :data:`_MAX_DEPTH`.
    """
    stack: list[tuple[str, str | None, Any, int]] = [(where, None, value, 0)]
    while stack:
        name, key, item, depth = stack.pop()
        if depth > _MAX_DEPTH:
            raise _TooDeepError(name)
        yield name, key, item
        if isinstance(item, dict):
            for child_key, child in reversed(list(item.items())):
                path = f"{name}.{child_key}" if name else str(child_key)
                stack.append((path, str(child_key), child, depth + 1))
                stack.append((path, None, str(child_key), depth + 1))
        elif isinstance(item, list):
            for index in range(len(item) - 1, -1, -1):
                stack.append((f"{name}[{index}]", None, item[index], depth + 1))


def control_character_at(value: Any, where: str = "") -> tuple[str, str] | None:
    """The first field of ``value`` (plain JSON data) holding a control character (in a string
    or a key), and the character as ``U+0000``; None when there is none."""
    for name, _key, item in _fields(value, where):
        found = _CONTROL.search(item) if isinstance(item, str) else None
        if found:
            return name or "body", f"U+{ord(found.group()):04X}"
    return None


def number_time_at(value: Any, where: str = "") -> str | None:
    """The first field of a JSON body named as a time (``…At``) that holds a number: a time is
    an ISO 8601 string, and a number would be read as seconds since 1970."""
    for name, key, item in _fields(value, where):
        if key is None or not key.endswith("At"):
            continue
        if isinstance(item, int | float) or (isinstance(item, str) and item.strip().isdigit()):
            return name  # a number, a boolean, or digits the lenient decoder would take as seconds
    return None


def _invalid(field: str, message: str, source: str) -> ValidationException:
    return ValidationException(
        detail=f"{field} {message}", extra=[{"key": field, "message": message, "source": source}]
    )


def _refuse(field: str, char: str, source: str) -> ValidationException:
    message = (
        f"holds the control character {char}; send text without NUL bytes or control "
        "characters (tab, line feed and carriage return are fine)"
    )
    return ValidationException(
        detail=f"{field} {message}", extra=[{"key": field, "message": message, "source": source}]
    )


async def input_guard(
    connection: ASGIConnection[Any, Any, Any, Any], route_handler: BaseRouteHandler
) -> None:
    """Refuse ids that are not ids and text with control characters (see the module).

    Raises:
        NotFoundError: A path id is not a UUID.
        ValidationException: A parameter or a body string holds a control character.
    """
    del route_handler
    if connection.scope.get("method") == "OPTIONS":
        return  # Litestar's answer of the allowed methods: nothing is read
    for name, value in connection.path_params.items():
        text = str(value)
        hit = control_character_at(text, _camel(name))
        if hit is not None:
            raise _refuse(hit[0], hit[1], "path")
        api = str(connection.scope.get("path", "")).startswith("/api/")
        if api and name.endswith("_id") and not UUID_PATTERN.fullmatch(text):
            shown = text if len(text) <= _SHOWN else text[:_SHOWN] + "…"
            raise NotFoundError(
                f"There is no {name.removesuffix('_id').replace('_', ' ')} {shown!r}: ids are "
                "UUIDs such as 3e8c3f41-7d76-4f1b-8f41-4f5a6b7c8d9e.",
                field=_camel(name),
            )
    for name, value in connection.query_params.multi_items():
        hit = control_character_at(str(name)) or control_character_at(str(value), str(name))
        if hit is not None:
            raise _refuse(hit[0], hit[1], "query")
    if connection.scope.get("method") not in _BODY_METHODS:
        return
    # Whatever its content type says: a JSON body parameter decodes any body as JSON.
    body = await connection.body()  # type: ignore[attr-defined]
    if not body:
        return
    try:
        data = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return  # not JSON: the handler answers invalid_json, or reads it as what it is
    try:
        hit = control_character_at(data)
        timed = number_time_at(data)
    except _TooDeepError as exc:
        raise _invalid(
            str(exc) or "body",
            f"nests deeper than {_MAX_DEPTH} levels; send a flatter JSON object",
            "body",
        ) from None
    if hit is not None:
        raise _refuse(hit[0], hit[1], "body")
    if timed is not None:
        raise _invalid(
            timed,
            "is not an ISO 8601 time; give one with its zone, such as 2026-12-01T12:00:00Z",
            "body",
        )
