"""Who may see and touch what (ARCHITECTURE §5, API.md Conventions).

Another company's resource is *not found* (existence is not revealed). Inside the company, board,
admin and system actors may do everything; an agent key may read and update only the issues
assigned to its agent or bound to its run, and the workspaces of those issues; a run token
(``runBound``) only its run's issue, that issue's workspaces and the workspace its run holds (not
the agent's other issues); board-only actions (commands in settings and config, branch reconcile)
are *forbidden* to agents.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from workspace_realizer.domain.errors import ForbiddenError, NotFoundError

if TYPE_CHECKING:
    from contracts.base import Principal

__all__ = ["Access"]


@dataclass(frozen=True)
class Access:
    """The acting principal, as the use cases check it."""

    company_id: str | None
    actor_type: str
    actor_id: str
    run_id: str | None = None
    issue_id: str | None = None
    run_bound: bool = False
    """A run token: the agent's rights limited to ``issue_id`` and its run's workspace."""

    @classmethod
    def of(cls, principal: Principal) -> Access:
        """The access of a request's principal."""
        return cls(
            company_id=principal.company_id,
            actor_type=principal.actor.type,
            actor_id=principal.actor.id,
            run_id=principal.run_id,
            issue_id=principal.issue_id,
            run_bound=principal.run_bound,
        )

    @property
    def is_agent(self) -> bool:
        """True for agent keys and run tokens."""
        return self.actor_type == "agent"

    def check_company(self, company_id: str, what: str, ident: str) -> None:
        """Raise ``NotFoundError`` unless the thing belongs to the principal's company.

        An admin without a company may reach every company.
        """
        if self.company_id == company_id:
            return
        if self.company_id is None and self.actor_type == "admin":
            return
        raise NotFoundError(f"There is no {what} {ident}.", **{_key(what): ident})

    def may_touch_issue(self, issue_id: str, assignee_agent_id: str | None) -> bool:
        """Whether the actor may update (and an agent read) this issue: an agent key its agent's
        issues and its run's; a run token its run's issue only."""
        if not self.is_agent:
            return True
        if self.run_bound:
            return self.issue_id is not None and self.issue_id == issue_id
        return assignee_agent_id == self.actor_id or self.issue_id == issue_id

    def holds(self, run_holders: Collection[str]) -> bool:
        """Whether the principal is a run token whose run holds the workspace of these holders."""
        return self.run_bound and self.run_id is not None and self.run_id in run_holders

    def check_issue(self, issue_id: str, assignee_agent_id: str | None) -> None:
        """Raise ``ForbiddenError`` when an agent reaches an issue that is neither its own nor its
        run's."""
        if not self.may_touch_issue(issue_id, assignee_agent_id):
            if self.run_bound:
                raise ForbiddenError(
                    "This run's token may only touch the issue of its run.",
                    issueId=issue_id,
                    runIssueId=self.issue_id,
                )
            raise ForbiddenError(
                "This agent may only touch issues assigned to it or bound to its run.",
                issueId=issue_id,
            )

    def check_board(self, action: str) -> None:
        """Raise ``ForbiddenError`` for agents: ``action`` is board only."""
        if self.is_agent:
            raise ForbiddenError(f"Only a board key may {action}.", actor=self.actor_id)


def _key(what: str) -> str:
    words = what.split()
    return words[0] + "".join(word.capitalize() for word in words[1:]) + "Id"
