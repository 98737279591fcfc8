"""Who may see and do what: the one access model of the gateway and every service.

ARCHITECTURE §5.1 describes it. A request's principal is one of five actor kinds
(plus ``system``, Clipyard itself); every route and bus endpoint acts on one resource kind with one
action (read, write or control). :data:`POLICY` (:mod:`servicekit.policy`) says, per kind, resource and action, how far the
actor reaches:

- ``ALL``: every company's (the admin key: companies, keys, secrets, operations, events);
- ``COMPANY``: everything of its own company;
- ``OWN``: only its own things inside its company: for an agent key its agent, the issues assigned
  to that agent and those issues' workspaces, runs and operations; for a run
  token its run, that run's issue, the workspaces of that issue and the one the run holds, and the
  operations the run started;
- ``REDACTED``: the company's, without ``env`` values and host paths (project workspaces and
  projects, for agents);
- missing: refused with 403 ``forbidden``, the message naming who may.

Another company's thing is *not found* (404), so its existence is not revealed; one of the same
company that the actor may not reach is 403. The gateway checks the kind-level rule (each route
declares its resource and action); the owning service checks the company and the ``OWN`` rules,
because only it holds the facts (an issue's assignee, a workspace's holders, a run's agent).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contracts.base import Actor
from contracts.errors import DetailedError, ErrorCode
from servicekit.policy import (
    POLICY,
    WHO,
    Action,
    ActorKind,
    Reach,
    Resource,
    allowed_kinds,
    noun,
    reach_of,
)

if TYPE_CHECKING:
    from contracts.base import Principal

__all__ = [
    "POLICY",
    "Access",
    "AccessDeniedError",
    "Action",
    "ActorKind",
    "NotVisibleError",
    "Reach",
    "Resource",
    "kind_of",
    "reach_of",
]


class AccessDeniedError(DetailedError, PermissionError):
    """The actor may not do this (403 ``forbidden``); the message says who may."""

    code = ErrorCode.FORBIDDEN


class NotVisibleError(DetailedError, LookupError):
    """Another company's thing, answered as if it did not exist (404 ``not_found``)."""

    code = ErrorCode.NOT_FOUND


def kind_of(principal: Principal) -> ActorKind:
    """The actor kind of a principal."""
    actor = principal.actor.type
    if actor == "agent":
        return ActorKind.RUN_TOKEN if principal.run_bound else ActorKind.AGENT_KEY
    if actor == "board":
        return ActorKind.BOARD_SESSION if principal.via_session else ActorKind.BOARD_KEY
    if actor == "admin":
        return ActorKind.ADMIN
    if actor == "system":
        return ActorKind.SYSTEM
    raise AccessDeniedError(f"Unknown actor type {actor!r}; nothing is allowed to it.", actor=actor)


@dataclass(frozen=True)
class Access:
    """A principal as the access model sees it: its kind, company, agent, run and issue."""

    kind: ActorKind
    company_id: str | None
    actor_id: str
    run_id: str | None = None
    issue_id: str | None = None

    @classmethod
    def of(cls, principal: Principal) -> Access:
        """The access of a request's principal."""
        return cls(
            kind=kind_of(principal),
            company_id=principal.company_id,
            actor_id=principal.actor.id,
            run_id=principal.run_id,
            issue_id=principal.issue_id,
        )

    @property
    def is_agent(self) -> bool:
        """An agent key or a run token."""
        return self.kind in (ActorKind.AGENT_KEY, ActorKind.RUN_TOKEN)

    @property
    def is_run_token(self) -> bool:
        """A run token (the agent's rights narrowed to its run)."""
        return self.kind is ActorKind.RUN_TOKEN

    @property
    def agent_id(self) -> str | None:
        """The agent an agent key or run token acts as."""
        return self.actor_id if self.is_agent else None

    def reach(self, resource: Resource, action: Action) -> Reach:
        """How far this actor reaches, or ``AccessDeniedError`` naming who may."""
        reach = reach_of(self.kind, resource, action)
        if reach is None:
            raise AccessDeniedError(
                f"{WHO[self.kind].capitalize()} may not {action.value} {noun(resource)}; "
                f"{allowed_kinds(resource, action)} may.",
                actorKind=self.kind.value,
                resource=resource.value,
                action=action.value,
            )
        return reach

    def redacted(self, resource: Resource) -> bool:
        """Whether reads of ``resource`` must leave out ``env`` values and host paths."""
        return reach_of(self.kind, resource, Action.READ) is Reach.REDACTED

    # The company boundary -------------------------------------------------------------------

    def sees_company(self, company_id: str | None) -> bool:
        """Whether things of ``company_id`` are visible at all (the admin and Clipyard itself,
        acting for no company, see every company)."""
        if self.company_id is None:
            return self.kind in (ActorKind.ADMIN, ActorKind.SYSTEM)
        return self.company_id == company_id

    def check_company(self, company_id: str | None, what: str, ident: str) -> None:
        """Raise ``NotVisibleError`` (naming ``<what>Id``) unless ``company_id`` is visible."""
        if not self.sees_company(company_id):
            raise NotVisibleError(f"There is no {what} {ident}.", **{_key(what): ident})

    def scope(self) -> str | None:
        """The company this actor's lists are limited to (None: every company).

        Raises:
            AccessDeniedError: A non-operator credential that belongs to no company.
        """
        if self.company_id is None and self.kind not in (ActorKind.ADMIN, ActorKind.SYSTEM):
            raise AccessDeniedError("This key belongs to no company.", actorKind=self.kind.value)
        return self.company_id

    # Own things (OWN reach) -----------------------------------------------------------------

    def owns_agent(self, agent_id: str | None) -> bool:
        """Whether ``agent_id`` is the actor's own agent (always true for the board)."""
        return not self.is_agent or agent_id == self.actor_id

    def owns_issue(self, issue_id: str, assignee_agent_id: str | None) -> bool:
        """Whether the issue is the actor's: an agent key's agent is its assignee; a run token's
        run is for it (even once the issue is reassigned). The board owns every issue."""
        if not self.is_agent:
            return True
        if self.is_run_token:
            return self.issue_id is not None and issue_id == self.issue_id
        return assignee_agent_id == self.actor_id

    def owns_run(self, run_id: str, run_agent_id: str | None) -> bool:
        """Whether the run is the actor's: its agent's (agent key) or itself (run token)."""
        if not self.is_agent:
            return True
        if self.is_run_token:
            return run_id == self.run_id
        return run_agent_id == self.actor_id

    def holds(self, run_holders: Collection[str]) -> bool:
        """Whether the actor is a run token whose run is among ``run_holders`` (of a workspace)."""
        return self.is_run_token and self.run_id is not None and self.run_id in run_holders

    def started(self, actor: Actor | Mapping[str, str] | None, run_id: str | None) -> bool:
        """Whether an operation started by ``actor`` (for ``run_id``) is the actor's own: an agent
        key's when its agent started it, a run token's when its run did. The board's: all.

        ``actor`` is the contract's :class:`~contracts.base.Actor` or the ``{"type", "id"}`` an
        operation's stored ``Started`` event holds.
        """
        if not self.is_agent:
            return True
        if self.is_run_token:
            return run_id is not None and run_id == self.run_id
        if actor is None:
            return False
        if isinstance(actor, Actor):
            return actor.type == "agent" and actor.id == self.actor_id
        return actor.get("type") == "agent" and actor.get("id") == self.actor_id

    # Checks that raise ----------------------------------------------------------------------

    def check_issue(self, issue_id: str, assignee_agent_id: str | None) -> None:
        """Raise ``AccessDeniedError`` unless the issue is the actor's (see :meth:`owns_issue`)."""
        if self.owns_issue(issue_id, assignee_agent_id):
            return
        if self.is_run_token:
            raise AccessDeniedError(
                "This run's token may only touch the issue of its run.",
                issueId=issue_id,
                runIssueId=self.issue_id,
            )
        raise AccessDeniedError(
            "This agent may only touch issues assigned to it.",
            issueId=issue_id,
        )

    def check_agent(self, agent_id: str, action: str) -> None:
        """Raise ``AccessDeniedError`` when an agent key or run token reaches another agent."""
        if not self.owns_agent(agent_id):
            raise AccessDeniedError(
                f"An agent can only {action} itself.", agentId=agent_id, actor=self.actor_id
            )

    def check_run(self, run_id: str, run_agent_id: str | None, action: str) -> None:
        """Raise ``AccessDeniedError`` when an agent reaches another agent's run, or a run token
        another run than its own (even one of its agent)."""
        if self.owns_run(run_id, run_agent_id):
            return
        if self.is_run_token:
            raise AccessDeniedError(
                f"A run token can only {action} its own run ({self.run_id}); use an agent key "
                "or a board key for the agent's other runs.",
                runId=run_id,
                tokenRunId=self.run_id,
            )
        raise AccessDeniedError(
            f"An agent can only {action} its own runs.", runId=run_id, actor=self.actor_id
        )

    def check_board(self, action: str) -> None:
        """Raise ``AccessDeniedError`` for agents: ``action`` is the board's."""
        if self.is_agent:
            raise AccessDeniedError(
                f"Only a board key may {action}; {WHO[self.kind]} may not.",
                actorKind=self.kind.value,
            )

    def check_operator(self, what: str) -> None:
        """Raise ``AccessDeniedError`` unless the actor is the admin or Clipyard itself."""
        if self.kind not in (ActorKind.ADMIN, ActorKind.SYSTEM):
            raise AccessDeniedError(
                f"Only an admin or Clipyard itself may read {what}; {WHO[self.kind]} may not.",
                actorKind=self.kind.value,
            )


def _key(what: str) -> str:
    words = what.split()
    return words[0] + "".join(word.capitalize() for word in words[1:]) + "Id"
