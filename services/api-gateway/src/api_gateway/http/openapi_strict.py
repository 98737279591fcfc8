"""The OpenAPI document says what the API does (docs/design/API.md, "Errors" under its
conventions): :func:`tighten` corrects, once at its first use, what Litestar's generator leaves looser
than the behaviour, and the docs routes serve the corrected document (:data:`DOC_STATE`).

- Request bodies are described by msgspec itself (``msgspec.json.schema_components``), which is
  what decodes them: unknown fields refused (``additionalProperties: false``), every bound
  (``exclusiveMinimum`` included, which Litestar drops), patterns and enums, nested inputs too.
- Text a client sends holds no control character but tab, line feed and carriage return
  (``api_gateway.http.input_guard``): every free string of a request body, its map keys, and every
  string query parameter carry :data:`TEXT_PATTERN`.
- A path id, and ``X-Run-Id``, is a UUID (``format: uuid`` and its pattern); a free-form field
  (typed ``Any``) is a JSON value of such text (the ``JsonValue`` schema).
- Rules between fields of a body are stated (``if``/``then``, ``anyOf``): a ``reuse_existing``
  mode names its workspace, an ``override`` reconcile its reason, a project workspace a ``cwd`` or
  a ``repoUrl``. Rules between query parameters (``version`` or ``at``; ``tail`` or
  ``offset``/``length``) cannot be stated in OpenAPI; their 400 names both. ``X-Paperclip-Run-Id``
  is left out of the parameters (an alias of ``X-Run-Id`` that API.md documents).
- A 204 answer has no body, and the company event stream answers ``text/event-stream``.
"""

from __future__ import annotations

import inspect
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Final

import msgspec
from litestar import Litestar, Request
from litestar.openapi.plugins import JsonRenderPlugin, SwaggerRenderPlugin

from api_gateway.http.input_guard import UUID_PATTERN

__all__ = [
    "DOC_STATE",
    "STREAM_PATH",
    "TEXT_PATTERN",
    "StrictJsonRenderPlugin",
    "StrictSwaggerRenderPlugin",
    "corrected_document",
    "strict_structs",
    "tighten",
]

DOC_STATE: Final = "openapi_doc"
"""The app state key of the corrected document."""
STREAM_PATH: Final = "/api/companies/{company_id}/events/stream"
TEXT_PATTERN: Final = "^[^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f]*$"
"""Text without control characters but tab, line feed and carriage return."""
_PACKAGES: Final = ("contracts.", "api_gateway.")
_RUN_HEADERS: Final = frozenset({"x-run-id", "x-paperclip-run-id"})
_UUID: Final = {"type": "string", "format": "uuid", "pattern": UUID_PATTERN.pattern}


def strict_structs() -> list[type[msgspec.Struct]]:
    """The contract and gateway structs that refuse unknown fields (request bodies and their
    nested inputs), all imported once the app is."""
    found: dict[str, type[msgspec.Struct]] = {}
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(_PACKAGES):
            continue
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, msgspec.Struct) and value.__struct_config__.forbid_unknown_fields:
                found.setdefault(value.__name__, value)
    return list(found.values())


def _plain_text(schema: Any) -> bool:
    return (
        isinstance(schema, dict)
        and schema.get("type") == "string"
        and not any(k in schema for k in ("pattern", "enum", "format", "const"))
    )


_JSON_VALUE: Final = "JsonValue"
_JSON_REF: Final = {"$ref": f"#/components/schemas/{_JSON_VALUE}"}
_JSON_SCHEMA: Final = {
    "title": _JSON_VALUE,
    "description": "Any JSON value whose strings and keys hold no control character but tab, "
    "line feed and carriage return.",
    "anyOf": [
        {"type": "string", "pattern": TEXT_PATTERN},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "array", "items": _JSON_REF},
        {
            "type": "object",
            "propertyNames": {"type": "string", "pattern": TEXT_PATTERN},
            "additionalProperties": _JSON_REF,
        },
    ],
}
"""What a free-form field (``metadata``, a payload) may hold."""


def _free(schema: Mapping[str, object]) -> bool:
    """A schema that admits anything (a field typed ``Any``)."""
    return not any(
        k in schema for k in ("type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const")
    )


def _text_only(schema: Any) -> None:
    """Give every free string under ``schema`` :data:`TEXT_PATTERN` (map keys too), and every
    free-form value the :data:`_JSON_VALUE` schema."""
    if not isinstance(schema, dict):
        return
    if _plain_text(schema):
        schema["pattern"] = TEXT_PATTERN
        return
    for key in ("properties",):
        for name, child in list((schema.get(key) or {}).items()):
            if isinstance(child, dict) and _free(child):
                schema[key][name] = {**child, **_JSON_REF}
    for key in ("items", "additionalProperties"):
        child = schema.get(key)
        if isinstance(child, dict) and _free(child):
            schema[key] = {**child, **_JSON_REF}
    if schema.get("type") == "object" and "properties" not in schema:
        schema.setdefault("additionalProperties", dict(_JSON_REF))
    children = [
        *(schema.get("properties") or {}).values(),
        schema.get("items"),
        *(schema.get("anyOf") or []),
        *(schema.get("oneOf") or []),
        *(schema.get("allOf") or []),
    ]
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        children.append(extra)
        schema["propertyNames"] = {"type": "string", "pattern": TEXT_PATTERN}
    for child in children:
        _text_only(child)


def _required_when(field: str, value: str, needed: str) -> dict[str, object]:
    return {
        "if": {"properties": {field: {"const": value}}, "required": [field]},
        "then": {
            "required": [needed],
            "properties": {needed: {"type": "string", "pattern": "\\S"}},
        },
    }


_CLEARED: Final = {"anyOf": [{"type": "null"}, {"type": "string", "pattern": "^\\s*$"}]}
"""A source field a PATCH clears: null, or only blanks (the realizer reads blanks as none)."""

_CROSS_FIELD: Final[dict[str, dict[str, object]]] = {
    "ExecutionWorkspaceSettingsIn": _required_when(
        "mode", "reuse_existing", "executionWorkspaceId"
    ),
    "RealizeIssueWorkspaceBody": _required_when("mode", "reuse_existing", "executionWorkspaceId"),
    "ReconcileBranchBody": _required_when("mode", "override", "reason"),
    "CreateCompany": {
        "if": {
            "anyOf": [
                {"not": {"required": ["issuePrefix"]}},
                {"properties": {"issuePrefix": {"type": "null"}}},
            ]
        },
        "then": {"properties": {"name": {"type": "string", "pattern": "[A-Za-z]"}}},
    },
    "CreateApiKey": {
        "allOf": [
            _required_when("kind", "agent", "agentId"),
            {
                "if": {"properties": {"kind": {"const": "board"}}, "required": ["kind"]},
                "then": {"properties": {"agentId": {"type": "null"}}},
            },
        ]
    },
    "UpdateProjectWorkspaceBody": {
        "not": {  # both cleared (null or blank): 422
            "required": ["cwd", "repoUrl"],
            "properties": {"cwd": _CLEARED, "repoUrl": _CLEARED},
        }
    },
    "CreateProjectWorkspaceBody": {
        "anyOf": [
            {"required": ["cwd"], "properties": {"cwd": {"type": "string", "pattern": "\\S"}}},
            {
                "required": ["repoUrl"],
                "properties": {"repoUrl": {"type": "string", "pattern": "\\S"}},
            },
        ]
    },
}
"""Rules between fields that the answer enforces and the document now states."""


def _operations(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path, item in (doc.get("paths") or {}).items():
        for method in ("get", "put", "post", "delete", "patch"):
            if isinstance(item.get(method), dict):
                yield path, item[method]


def _parameters(operation: dict[str, Any]) -> None:
    # The Paperclip alias of X-Run-Id stays a documented alias (API.md), not a parameter: sent
    # with X-Run-Id naming another run it is refused, which no schema can say.
    operation["parameters"] = [
        p
        for p in operation.get("parameters") or []
        if not (p.get("in") == "header" and str(p.get("name", "")).lower() == "x-paperclip-run-id")
    ]
    for parameter in operation["parameters"]:
        where, name = parameter.get("in"), str(parameter.get("name", ""))
        if (where == "path" and name.endswith("_id")) or (
            where == "header" and name.lower() in _RUN_HEADERS
        ):
            parameter["schema"] = dict(_UUID)
        elif where == "header" and name.lower() == "last-event-id":
            parameter["schema"] = {"type": "string", "pattern": "^[0-9]{1,19}$"}
        elif where in ("query", "path"):
            _text_only(parameter.get("schema"))


def _responses(path: str, operation: dict[str, Any]) -> None:
    responses = operation.get("responses") or {}
    if isinstance(responses.get("204"), dict):
        responses["204"].pop("content", None)
    if path == STREAM_PATH and isinstance(responses.get("200"), dict):
        responses["200"]["content"] = {
            "text/event-stream": {
                "schema": {
                    "type": "string",
                    "description": "Server-Sent Events: `id:` the stream sequence, `event:` the event "
                    "type, `data:` the event as JSON.",
                }
            }
        }


def tighten(doc: dict[str, Any]) -> dict[str, Any]:
    """Correct the OpenAPI document ``doc`` (plain data) in place (see the module); returns it."""
    schemas: dict[str, Any] = doc.setdefault("components", {}).setdefault("schemas", {})
    _, exact = msgspec.json.schema_components(
        strict_structs(), ref_template="#/components/schemas/{name}"
    )
    for name, schema in exact.items():
        if name in schemas or schema.get("additionalProperties") is False:
            _text_only(schema)
            schemas[name] = schema
    schemas[_JSON_VALUE] = _JSON_SCHEMA
    for name, rule in _CROSS_FIELD.items():
        if name in schemas:
            schemas[name] = {**schemas[name], **rule}
    for path, operation in _operations(doc):
        _parameters(operation)
        _responses(path, operation)
    return doc


_BUILDING = threading.Lock()


def corrected_document(app: Litestar) -> dict[str, Any]:
    """``app``'s corrected document, built at its first use and kept in :data:`DOC_STATE`.

    Not at start: generating and correcting it takes about 0.8 s of CPU, more than the rest of
    the gateway's start, for a document that a client asks for rarely. Safe from any thread.
    """
    doc: dict[str, Any] | None = app.state.get(DOC_STATE)
    if doc is not None:
        return doc
    with _BUILDING:
        doc = app.state.get(DOC_STATE)
        if doc is None:
            doc = tighten(app.openapi_schema.to_schema())
            app.state[DOC_STATE] = doc
    return doc


class _Corrected:
    """A docs plugin that renders the corrected document (:data:`DOC_STATE`)."""

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        doc = corrected_document(request.app)
        rendered: bytes = super().render(request, doc)  # type: ignore[misc]
        return rendered


class StrictJsonRenderPlugin(_Corrected, JsonRenderPlugin):
    """``/api/docs/openapi.json``: the corrected document."""


class StrictSwaggerRenderPlugin(_Corrected, SwaggerRenderPlugin):
    """``/api/docs``: Swagger UI on the corrected document."""
