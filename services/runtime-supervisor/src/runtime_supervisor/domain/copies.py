"""The supervisor's read-only copies of other services' records (ARCHITECTURE §1): execution
workspaces, project workspaces, projects (their egress allowlist) and issues (realizer), runs
(controller), companies (gateway).

Each copy is an aggregate of the supervisor's own store, fed by its inbox, so that it is rebuilt
from that store (the event stream keeps only 30 days). A copy holds plain fields, written as each
upstream event says; it never decides anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal
from uuid import UUID, uuid5

from eventsourcing.domain import event

from runtime_supervisor.domain.base import CompanyScoped

__all__ = ["COPY_KINDS", "CopyKind", "UpstreamCopy", "copy_id"]

CopyKind = Literal["workspace", "project_workspace", "issue", "run", "company", "project"]
COPY_KINDS: Final[tuple[CopyKind, ...]] = (
    "workspace",
    "project_workspace",
    "issue",
    "run",
    "company",
    "project",
)

_NAMESPACE: Final = UUID("5b0f7a2e-3c1d-5e4f-8a9b-1c2d3e4f5a6b")
_MISSING: Final = object()


def copy_id(kind: CopyKind, key: str) -> UUID:
    """The id of the copy of ``kind`` ``key`` (a UUID5, the same on every node and rebuild)."""
    return uuid5(_NAMESPACE, f"{kind}:{key}")


class UpstreamCopy(CompanyScoped):
    """The copy of one upstream record: ``kind``, ``key`` (its id upstream), ``company_id`` and
    ``fields`` (plain data: strings, numbers, lists, dicts, times)."""

    @staticmethod
    def create_id(kind: CopyKind, key: str) -> UUID:
        """One copy per upstream record."""
        return copy_id(kind, key)

    @event("Copied")
    def __init__(
        self, *, kind: CopyKind, key: str, company_id: str | None, fields: dict[str, Any]
    ) -> None:
        self.kind = kind
        self.key = key
        self.company_id = company_id  # type: ignore[assignment]
        self.fields: dict[str, Any] = dict(fields)

    def note(self, fields: Mapping[str, Any]) -> bool:
        """Record the fields that differ from the copy's; return whether any did."""
        changes = {k: v for k, v in fields.items() if self.fields.get(k, _MISSING) != v}
        if not changes:
            return False
        self._updated(changes=changes)
        return True

    @event("Updated")
    def _updated(self, changes: dict[str, Any]) -> None:
        self.fields = {**self.fields, **changes}

    def get(self, name: str, default: Any = None) -> Any:
        """One field of the copy (``default`` when the upstream never said)."""
        return self.fields.get(name, default)
