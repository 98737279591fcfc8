"""Public events of the api-gateway's own aggregates: companies and API keys.

No key material (clear keys or hashes) ever appears in a public event.
"""

from __future__ import annotations

from typing import Literal

from contracts.base import Event

__all__ = [
    "ApiKeyCreated",
    "ApiKeyKind",
    "ApiKeyRevoked",
    "CompanyCreated",
    "CompanyHostAccessChanged",
]

ApiKeyKind = Literal["board", "agent"]


class CompanyCreated(Event, tag="company.created.v1", frozen=True, kw_only=True):
    """A company was created by an admin."""

    name: str
    issue_prefix: str


class CompanyHostAccessChanged(
    Event, tag="company.host_access_changed.v1", frozen=True, kw_only=True
):
    """An admin changed what of the host a company may use (docs/design/isolation.md):
    ``hostTrusted`` (its project workspaces may name any host folder) and ``allowedRoots`` (the
    folders under which they may)."""

    host_trusted: bool
    allowed_roots: list[str]


class ApiKeyCreated(Event, tag="api_key.created.v1", frozen=True, kw_only=True):
    """An API key was issued for a company (the key itself is shown once, never published)."""

    name: str
    kind: ApiKeyKind
    agent_id: str | None = None


class ApiKeyRevoked(Event, tag="api_key.revoked.v1", frozen=True, kw_only=True):
    """An API key was revoked; it stops working everywhere."""
