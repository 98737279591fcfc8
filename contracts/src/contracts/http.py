"""HTTP bodies of the api-gateway (API.md): requests are strict, responses camelCase."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from contracts.base import Struct
from contracts.gateway import ApiKeyKind

__all__ = [
    "Accepted202",
    "ApiKey",
    "ApiKeyIssued",
    "Company",
    "ComponentHealth",
    "CreateApiKey",
    "CreateCompany",
    "EntityId",
    "ErrorBody",
    "Health",
    "Name",
    "ServiceHealth",
    "SetCompanyHostAccess",
    "SignIn",
    "SignedIn",
]


class StrictBody(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True
):
    """An inbound HTTP body: unknown fields are refused with 400."""


EntityId = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?!\n)$",
        description="The id of a record: a UUID.",
        examples=["3e8c3f41-7d76-4f1b-8f41-4f5a6b7c8d9e"],
    ),
]
"""A body's reference to a record (an agent, an issue, a workspace): a UUID, or 400."""

Name = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=200,
        pattern=r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*(?!\n)$",
        description="A name: 1 to 200 characters, not only blanks, no control characters.",
    ),
]
"""The name of a company or a key (the gateway strips it and refuses it empty or too long)."""


class CreateCompany(StrictBody, frozen=True, kw_only=True):
    """``POST /api/companies``."""

    name: Name
    issue_prefix: Annotated[str, msgspec.Meta(pattern="^[A-Z]{1,10}(?!\n)$")] | None = None
    """1-10 upper-case letters; derived from the name's ASCII letters when absent."""


class Company(Struct, frozen=True, kw_only=True):
    """A company as the API shows it."""

    id: str
    name: str
    issue_prefix: str
    created_at: datetime
    updated_at: datetime
    host_trusted: bool = False
    """Its project workspaces may name any folder of the host (set with the admin key)."""
    allowed_roots: list[str] = msgspec.field(default_factory=list)
    """Host folders its project workspaces may name (set with the admin key)."""


_SEGMENT = r"([^/.\x00-\x1f\x7f][^/\x00-\x1f\x7f]*|\.[^/.\x00-\x1f\x7f][^/\x00-\x1f\x7f]*|\.\.[^/\x00-\x1f\x7f]+)"
HostFolder = Annotated[
    str,
    msgspec.Meta(
        pattern=f"^(/{_SEGMENT})+(?!\\n)$",
        max_length=4096,
        description="A normalized absolute folder of the host, not / itself.",
    ),
]
"""A folder an admin lets a company name: absolute and normalized (``/home/me/src``)."""


class SetCompanyHostAccess(StrictBody, frozen=True, kw_only=True):
    """``PUT /api/companies/{companyId}/host-access`` (admin key): ``allowedRoots`` are absolute
    folders of the host (no ``..``, not ``/``); the whole setting is replaced."""

    host_trusted: bool = False
    allowed_roots: list[HostFolder] = msgspec.field(default_factory=list)


class CreateApiKey(StrictBody, frozen=True, kw_only=True):
    """``POST /api/companies/{companyId}/api-keys``."""

    name: Name
    kind: ApiKeyKind
    agent_id: EntityId | None = None


class ApiKey(Struct, frozen=True, kw_only=True):
    """An API key without key material."""

    id: str
    company_id: str
    name: str
    kind: ApiKeyKind
    agent_id: str | None
    created_at: datetime
    updated_at: datetime
    revoked_at: datetime | None = None


class ApiKeyIssued(Struct, frozen=True, kw_only=True):
    """A newly created key: the only time the clear key is shown."""

    id: str
    name: str
    kind: ApiKeyKind
    agent_id: str | None
    key: str
    created_at: datetime


class SignIn(StrictBody, frozen=True, kw_only=True):
    """``POST /api/session``: exchange a board key for a session cookie."""

    key: str


class SignedIn(Struct, frozen=True, kw_only=True):
    """The session's CSRF token (send it as ``X-CSRF-Token`` on mutations)."""

    csrf_token: str
    company_id: str


class ErrorBody(Struct, frozen=True, kw_only=True):
    """Every error answer: a sentence a person can act on, a code, and details."""

    error: str
    code: str
    details: dict[str, Any] = msgspec.field(default_factory=dict)


class Accepted202(Struct, frozen=True, kw_only=True):
    """Long work still running: poll ``GET /api/operations/{operationId}``."""

    operation_id: str
    status: Literal["running"] = "running"


class ServiceHealth(Struct, frozen=True, kw_only=True):
    """One service's answer to a ping."""

    status: Literal["ok", "down"]
    version: str | None = None
    latency_ms: float | None = None
    error: str | None = None


class ComponentHealth(Struct, frozen=True, kw_only=True):
    """The state of a component such as NATS or the store."""

    status: Literal["ok", "down"] = "ok"
    kind: str | None = None
    error: str | None = None


class Health(Struct, frozen=True, kw_only=True):
    """``GET /api/health``."""

    status: Literal["ok", "degraded"]
    services: dict[str, ServiceHealth]
    nats: ComponentHealth
    store: ComponentHealth
    failing: list[str] = msgspec.field(default_factory=list)
    """The parts that are down (``nats``, ``store``, service names); empty when all is well."""
