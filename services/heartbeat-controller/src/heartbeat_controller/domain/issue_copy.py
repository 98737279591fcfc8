"""The controller's read-only copy of the realizer's issues (ARCHITECTURE §1): company, assignee,
current execution workspace, status, deleted. Fed by the realizer's public ``issue.*`` events
through the inbox, kept in the controller's own store (the stream keeps only 30 days). A copy
never decides anything: it holds what the realizer said last."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, cast
from uuid import UUID, uuid5

from eventsourcing.domain import event

from eventstore import CompanyScoped

if TYPE_CHECKING:
    from heartbeat_controller.domain.records import CopiedFields

__all__ = ["COPIED_FIELDS", "IssueCopy", "issue_copy_id"]

COPIED_FIELDS: Final = ("assignee_agent_id", "execution_workspace_id", "status", "deleted")
_NAMESPACE: Final = UUID("3f9c2b7e-8d41-5a6f-9c0e-7b2d4e6f8a1c")
_MISSING: Final = object()


def issue_copy_id(issue_id: str) -> UUID:
    """The id of the copy of issue ``issue_id`` (a UUID5: the same on every rebuild)."""
    return uuid5(_NAMESPACE, f"issue:{issue_id}")


class IssueCopy(CompanyScoped):
    """The copy of one issue of the realizer."""

    @staticmethod
    def create_id(issue_id: str) -> UUID:
        """One copy per issue."""
        return issue_copy_id(issue_id)

    @event("Copied")
    def __init__(self, *, issue_id: str, company_id: str | None, fields: CopiedFields) -> None:
        self.issue_id = issue_id
        self.company_id = company_id  # type: ignore[assignment]
        self.assignee_agent_id: str | None = None
        self.execution_workspace_id: str | None = None
        self.status: str | None = None
        self.deleted = False
        self._set_fields(fields)

    def _set_fields(self, fields: CopiedFields) -> None:
        for name, value in fields.items():
            if name in COPIED_FIELDS:
                setattr(self, name, value)

    def note(self, fields: CopiedFields) -> bool:
        """Record the fields that differ from the copy's; return whether any did."""
        changes = cast(
            "CopiedFields",
            {
                k: v
                for k, v in fields.items()
                if k in COPIED_FIELDS and getattr(self, k, _MISSING) != v
            },
        )
        if not changes:
            return False
        self._noted(changes=changes)
        return True

    @event("Noted")
    def _noted(self, changes: CopiedFields) -> None:
        self._set_fields(changes)
