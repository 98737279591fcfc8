"""Who may see and touch which agent and run (ARCHITECTURE §5, API.md "Agents, wakes, runs").

Another company's agent or run is *not found* (existence is not revealed); an admin without a
company reaches every company. Inside the company, board, admin and system actors may do
everything. An agent principal (an agent key, ``actor.type == "agent"``, ``actor.id`` = the agent)
reads only itself and its own runs, wakes only itself (for no issue, or for an issue assigned to
it), cancels only its own runs and never creates, updates or deletes agents (*forbidden*). A run
token (``run_bound``) is narrower still: it reads and cancels only its own run, lists only that
run, and wakes its agent only for the run's issue (or no issue).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from heartbeat_controller.domain.errors import ForbiddenError, NotFoundError

if TYPE_CHECKING:
    from contracts.base import Principal

__all__ = ["Access"]


@dataclass(frozen=True)
class Access:
    """The acting principal, as the use cases check it."""

    company_id: str | None
    actor_type: str
    actor_id: str
    run_bound: bool = False
    issue_id: str | None = None
    run_id: str | None = None

    @classmethod
    def of(cls, principal: Principal) -> Access:
        """The access of a request's principal."""
        return cls(
            company_id=principal.company_id,
            actor_type=principal.actor.type,
            actor_id=principal.actor.id,
            run_bound=principal.run_bound,
            issue_id=principal.issue_id,
            run_id=principal.run_id,
        )

    @property
    def is_agent(self) -> bool:
        """True for agent keys and run tokens."""
        return self.actor_type == "agent" or self.run_bound

    @property
    def trusted_for_unknown_issues(self) -> bool:
        """Whether a wake may name an issue the controller's copies do not know yet (they lag
        the realizer by an event or two): admin, board and system actors; never agents."""
        return not self.is_agent

    def sees_company(self, company_id: str | None) -> bool:
        """Whether the principal may see things of ``company_id``."""
        if self.company_id is None:
            return self.actor_type in ("admin", "system")
        return self.company_id == company_id

    def check_company(self, company_id: str | None, what: str, ident: str) -> None:
        """Raise ``NotFoundError`` unless the thing belongs to the principal's company."""
        if not self.sees_company(company_id):
            raise NotFoundError(f"There is no {what} {ident}.", **{f"{what}Id": ident})

    def check_own_agent(self, agent_id: str, action: str) -> None:
        """Raise ``ForbiddenError`` when an agent principal reaches another agent."""
        if self.is_agent and agent_id != self.actor_id:
            raise ForbiddenError(
                f"An agent can only {action} itself.", agentId=agent_id, actor=self.actor_id
            )

    def check_own_run(self, run_agent_id: str, run_id: str, action: str) -> None:
        """Raise ``ForbiddenError`` when an agent principal reaches another agent's run, or a
        run token another run than its own (even one of its agent)."""
        if self.is_agent and run_agent_id != self.actor_id:
            raise ForbiddenError(
                f"An agent can only {action} its own runs.", runId=run_id, actor=self.actor_id
            )
        if self.run_bound and run_id != self.run_id:
            raise ForbiddenError(
                f"A run token can only {action} its own run ({self.run_id}); use an agent key "
                "or a board key for the agent's other runs.",
                runId=run_id,
                tokenRunId=self.run_id,
            )

    def check_manage_agents(self, action: str) -> None:
        """Raise ``ForbiddenError`` for agent principals: managing agents is the board's."""
        if self.is_agent:
            raise ForbiddenError(
                f"Only a board or admin key may {action} agents; an agent may not.",
                actor=self.actor_id,
            )

    def check_wake_issue(self, issue_id: str | None) -> None:
        """Raise ``ForbiddenError`` when a run token wakes its agent for another issue."""
        if self.run_bound and issue_id is not None and issue_id != self.issue_id:
            raise ForbiddenError(
                "A run token can only wake its agent for the run's own issue (or no issue).",
                issueId=issue_id,
            )

    def check_wake_assignee(self, issue_id: str, assignee_agent_id: str | None) -> None:
        """Raise ``ForbiddenError`` when an agent key wakes its agent for an issue that is not
        assigned to that agent (a run token is bound to its run's issue instead)."""
        if self.actor_type == "agent" and not self.run_bound and assignee_agent_id != self.actor_id:
            raise ForbiddenError(
                f"An agent key can only wake its agent for an issue assigned to that agent (or "
                f"for no issue); issue {issue_id} is not assigned to agent {self.actor_id}: "
                "assign it first, or wake with a board key.",
                issueId=issue_id,
                actor=self.actor_id,
            )
