"""Projects and their execution-workspace policy (reference §1.3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventsourcing.domain import event

from workspace_realizer.domain.base import CompanyScoped
from workspace_realizer.domain.names import check_name

if TYPE_CHECKING:
    from workspace_realizer.domain.documents import PolicyDocument

__all__ = ["Project"]


class Project(CompanyScoped):
    """A project of one company, with the policy its issues' workspaces follow.

    ``policy`` is the stored (camelCase) form of ``ExecutionWorkspacePolicy``; None = defaults.
    """

    @classmethod
    def create(cls, *, company_id: str, name: str, policy: PolicyDocument | None) -> Project:
        """A new project.

        Raises:
            InvalidInputError: The name is empty or too long.
        """
        return cls(company_id=company_id, name=check_name(name, what="project"), policy=policy)

    @event("Created")
    def __init__(self, *, company_id: str, name: str, policy: PolicyDocument | None) -> None:
        self.company_id = company_id
        self.name = name
        self.policy = policy
        self.deleted = False

    def revise(self, *, name: str | None = None, policy: PolicyDocument | None = None) -> None:
        """Rename the project and/or replace its policy (None: unchanged); no event if nothing
        changes. The event carries the whole record after the change.

        Raises:
            InvalidInputError: The name is empty or too long.
        """
        new_name = self.name if name is None else check_name(name, what="project")
        new_policy = self.policy if policy is None else policy
        changed = [
            field
            for field, differs in (
                ("name", new_name != self.name),
                ("executionWorkspacePolicy", new_policy != self.policy),
            )
            if differs
        ]
        if changed:
            self._revised(name=new_name, policy=new_policy, changed_fields=changed)

    @event("Revised")
    def _revised(self, name: str, policy: PolicyDocument | None, changed_fields: list[str]) -> None:
        self.name, self.policy = name, policy

    def delete(self) -> None:
        """Delete the project (the application first checks nothing open depends on it)."""
        if not self.deleted:
            self._deleted()

    @event("Deleted")
    def _deleted(self) -> None:
        self.deleted = True
