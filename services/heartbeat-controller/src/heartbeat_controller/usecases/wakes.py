"""Use cases of wakes: on demand (or any source) from a principal, by the heartbeat timer, and
by assignment from the realizer's issue events (which also keep the issue copies)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

import msgspec

from contracts.agents import WakeAccepted, WakeAgent
from contracts.workspace_events import (
    IssueAssigned,
    IssueCreated,
    IssueDeleted,
    IssueStatusChanged,
    IssueWorkspaceLinked,
)
from eventstore import Cause, acting, system_cause
from heartbeat_controller.domain import IssueCopy, NotFoundError, ValidationError
from heartbeat_controller.settings import SERVICE_NAME
from heartbeat_controller.usecases.base import UseCaseBase
from servicekit.access import Access, Action, Resource

if TYPE_CHECKING:
    from eventsourcing.persistence import Tracking

    from contracts.base import Principal
    from heartbeat_controller.domain.records import CopiedFields

__all__ = ["MAX_PAYLOAD_BYTES", "WakeUseCases"]

log = logging.getLogger(__name__)

MAX_PAYLOAD_BYTES: Final = 64 * 1024
_TERMINAL_ISSUE: Final = frozenset({"done", "cancelled"})


def _check_wake(cmd: WakeAgent) -> None:
    if cmd.reason is not None and len(cmd.reason) > 500:
        raise ValidationError("reason: send at most 500 characters.", field="reason")
    if cmd.idempotency_key is not None and not 1 <= len(cmd.idempotency_key) <= 255:
        raise ValidationError("idempotencyKey: send 1 to 255 characters.", field="idempotencyKey")
    if cmd.payload is not None and len(msgspec.json.encode(cmd.payload)) > MAX_PAYLOAD_BYTES:
        raise ValidationError(
            f"payload: send at most {MAX_PAYLOAD_BYTES // 1024} KiB of JSON.", field="payload"
        )


class WakeUseCases(UseCaseBase):
    """Wakes and the issue copies."""

    def wake(
        self, principal: Principal, cmd: WakeAgent, *, tracking: Tracking | None = None
    ) -> WakeAccepted:
        """Accept a wake: a new queued run, the first wake's run for a known idempotency key, or
        the queued run of the same agent and issue (``coalesced``).

        An ``issueId`` must be an issue of the agent's company known to the controller's
        copies (another company's: 404 naming ``issueId``). The copies may lag the realizer by
        an event: an issue not seen yet is accepted from board and system principals (the
        run's workspace resolution then asks the realizer, which refuses an unknown issue),
        never from agents. An agent key names only an issue assigned to its agent; a run token
        only its run's issue (``Access.check_issue``). The run the principal acts for
        (``X-Run-Id``) is recorded as the wake's cause: for any key but a run token it must be a
        run of the principal's company and, for an agent key, of its agent
        (``UseCaseBase._check_acting_run``).

        Raises:
            NotFoundError: No such live agent, an unknown, deleted or foreign issue, or an
                ``X-Run-Id`` naming no run of the principal's company (``details.field``).
            AccessDeniedError: The admin key (agents *control*, ARCHITECTURE §5.1), an agent
                waking another agent, an agent key naming an issue not assigned to its agent or
                another agent's run as ``X-Run-Id``, a run token naming another issue than its
                run's.
            ValidationError: A reason, key or payload too long.
        """
        access = Access.of(principal)
        access.reach(Resource.AGENT, Action.CONTROL)
        agent = self.live_agent(access, cmd.agent_id)
        access.check_agent(cmd.agent_id, "wake")
        _check_wake(cmd)
        if cmd.issue_id is not None:
            copy = self.issues.get(cmd.issue_id)
            known = copy is not None and not copy.deleted and copy.company_id == agent.company_id
            # Board and system principals may name an issue not copied yet; agents never.
            if not known and (copy is not None or access.is_agent):
                raise NotFoundError(
                    f"issueId: there is no issue {cmd.issue_id} in the agent's company.",
                    issueId=cmd.issue_id,
                    field="issueId",
                )
            if access.is_agent:  # known here: agents never name an issue not copied yet
                assert copy is not None
                access.check_issue(cmd.issue_id, copy.assignee_agent_id)
        with self._acting_for(principal, cmd.reason or f"{cmd.source} wake"):
            accepted, objs = self._wake(
                agent,
                source=cmd.source,
                reason=cmd.reason,
                issue_id=cmd.issue_id,
                payload=cmd.payload,
                key=cmd.idempotency_key,
                requested_by=principal.actor,
                at=self.now(),
            )
        self._save_events([e for o in objs for e in o.collect_events()], tracking)
        return accepted

    def due_timer_wakes(self, now: datetime) -> list[WakeAccepted]:
        """Wake (``timer``, no issue, reason ``heartbeat_timer``) every agent whose heartbeat
        interval elapsed since its last timer wake (or since the interval was set); coalesced
        with its queued run like any wake.

        Each agent's wake is its own save: an agent whose wake fails (its due time cannot be
        computed, the save is refused) is logged and skipped; the others are still woken.
        """
        found: list[WakeAccepted] = []
        cause = system_cause(SERVICE_NAME, "heartbeat_timer")
        for agent_id, due in list(self._timer_dues()):
            if due > now:
                continue
            try:
                with acting(cause):
                    accepted, objs = self._wake(
                        self.agents[agent_id],
                        source="timer",
                        reason="heartbeat_timer",
                        issue_id=None,
                        payload=None,
                        key=None,
                        requested_by=cause.actor,
                        at=now,
                    )
                self._save_events([e for obj in objs for e in obj.collect_events()], None)
            except Exception:
                log.exception(
                    "timer wake of agent %s failed; the other agents are still woken",
                    agent_id,
                    extra={"agent_id": agent_id},
                )
                continue
            found.append(accepted)
        return found

    def _timer_dues(self) -> Iterable[tuple[str, datetime]]:
        """Every agent with an interval and when its next timer wake falls due; an agent whose
        due time cannot be computed is logged and left out (it never stops the others)."""
        for agent_id, agent in list(self.agents.items()):
            if agent.deleted or agent.heartbeat_interval_sec is None:
                continue
            try:
                last = self.last_timer_wake.get(agent_id)
                base = max(last, agent.timer_since) if last is not None else agent.timer_since
                due = base + timedelta(seconds=agent.heartbeat_interval_sec)
            except Exception:
                log.exception(
                    "agent %s: no timer wake (heartbeatIntervalSec %r unusable)",
                    agent_id,
                    agent.heartbeat_interval_sec,
                    extra={"agent_id": agent_id},
                )
                continue
            yield agent_id, due

    def next_timer_due(self) -> datetime | None:
        """When the earliest timer wake falls due (None: no agent has an interval)."""
        return min((due for _, due in self._timer_dues()), default=None)

    # -- the realizer's issues -----------------------------------------------------------------

    def note_issue_event(self, event: Any, tracking: Tracking | None) -> WakeAccepted | None:
        """Keep the copy of an issue from the realizer's ``issue.*`` event; an issue assigned to
        a live agent of its company (``IssueAssigned``, or ``IssueCreated`` with an assignee)
        that is not ``done``/``cancelled`` wakes it (``assignment``, reason
        ``issue_assigned``), in the same save as the copy and ``tracking``.

        Returns:
            The assignment wake's answer, if one was made.
        """
        fields = _issue_fields(event)
        objs: list[Any] = []
        accepted: WakeAccepted | None = None
        if fields is not None:
            issue_id = str(event.aggregate_id)
            current = self.issues.get(issue_id)
            with acting(system_cause(SERVICE_NAME, f"copy of {type(event).__name__}")):
                if current is None:
                    copy = IssueCopy(issue_id=issue_id, company_id=event.company_id, fields=fields)
                    objs.append(copy)
                else:
                    loaded: IssueCopy = self._load(str(current.id))
                    if loaded.note(fields):
                        objs.append(loaded)
                copy_now = objs[0] if objs else current
            assignee = fields.get("assignee_agent_id")
            agent = self.agents.get(assignee) if isinstance(assignee, str) else None
            if (
                isinstance(event, IssueAssigned | IssueCreated)
                and agent is not None
                and not agent.deleted
                and agent.company_id == event.company_id
                and getattr(copy_now, "status", None) not in _TERMINAL_ISSUE
            ):
                cause = Cause(
                    actor=event.actor, reason="issue_assigned", company_id=event.company_id
                )
                with acting(cause):
                    accepted, wake_objs = self._wake(
                        agent,
                        source="assignment",
                        reason="issue_assigned",
                        issue_id=issue_id,
                        payload={"issueId": issue_id},
                        key=None,
                        requested_by=event.actor,
                        at=self.now(),
                    )
                objs += wake_objs
        self._save_events([e for o in objs for e in o.collect_events()], tracking)
        return accepted


def _issue_fields(event: Any) -> CopiedFields | None:
    """What an ``issue.*`` event of the realizer says of the copied fields (None: nothing)."""
    if isinstance(event, IssueCreated):
        return {"status": event.status, "assignee_agent_id": event.assignee_agent_id}
    if isinstance(event, IssueAssigned):
        return {"assignee_agent_id": event.assignee_agent_id}
    if isinstance(event, IssueWorkspaceLinked):
        return {"execution_workspace_id": event.execution_workspace_id}
    if isinstance(event, IssueStatusChanged):
        return {"status": event.to_status}
    if isinstance(event, IssueDeleted):
        return {"deleted": True}
    return None
