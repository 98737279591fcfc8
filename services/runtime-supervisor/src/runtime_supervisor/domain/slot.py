"""Adapter slots (ARCHITECTURE §6): one aggregate per slot granted to a heartbeat run.

``granted`` (a ``local_stdio`` pool position or a ``remote_http`` slot is held for the run) →
``running`` (its adapter started) → ``finished`` (how it ended: ``exited``, ``timed_out``,
``killed``, ``detached`` or ``launch_failed``, with its exit, the last-line JSON ``{usage,
result}`` of its stdout and 64 KiB excerpts of each stream) → ``released`` (the pool position
is free again). A grant never launched may be released straight away (its 120 s expired, or the
run ended). Every event names the run (its ``run_id`` metadata), so the published envelope does.

Nothing of the adapter's environment, context or headers is ever an event field: they hold the
run token.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Literal, TypedDict
from uuid import UUID

from eventsourcing.domain import event

from contracts.errors import ErrorCode
from runtime_supervisor.domain.base import CompanyScoped
from runtime_supervisor.domain.errors import RuntimeSupervisorError, StateConflictError

if TYPE_CHECKING:
    from typing import Self

    from eventsourcing.domain import CanInitAggregate, CanMutateAggregate

__all__ = [
    "LIVE_SLOT_STATES",
    "AdapterSlot",
    "RunFinishedError",
    "SandboxUnavailableError",
    "SlotAbout",
    "SlotState",
    "SlotUnavailableError",
]

SlotState = Literal["granted", "running", "finished", "released"]
LIVE_SLOT_STATES: Final = frozenset({"granted", "running", "finished"})
"""States in which the slot is held (its pool position is not free)."""


class SlotUnavailableError(RuntimeSupervisorError):
    """Every ``local_stdio`` slot is held (the controller retries with backoff)."""

    code = ErrorCode.SLOT_UNAVAILABLE


class SandboxUnavailableError(RuntimeSupervisorError):
    """An untrusted agent cannot be contained on this node (not root, no ``useradd``)."""

    code = ErrorCode.SANDBOX_UNAVAILABLE


class RunFinishedError(RuntimeSupervisorError):
    """The run has finished: it gets no slot any more."""

    code = ErrorCode.RUN_FINISHED


class SlotAbout(TypedDict):
    """The run a slot's stored event is about (its ``about``)."""

    agent_id: str
    workspace_id: str | None


class AdapterSlot(CompanyScoped):
    """One slot granted to one run (see the module's docstring)."""

    event_aggregate = "slot"

    class Event(CompanyScoped.Event):
        """Base of a slot's events."""

        about: SlotAbout | None = dataclasses.field(default=None, kw_only=True)
        """``agent_id`` and ``workspace_id`` of the run at the time, so the published event is
        built from the stored one alone."""

    def trigger_event(self, event_class: type[CanMutateAggregate[UUID]], **kwargs: Any) -> None:
        """Trigger an event stamped with its run and what it is about."""
        kwargs.setdefault("run_id", self.run_id)
        about: SlotAbout = {"agent_id": self.agent_id, "workspace_id": self.workspace_id}
        kwargs.setdefault("about", about)
        super().trigger_event(event_class, **kwargs)

    @classmethod
    def _create(cls, event_class: type[CanInitAggregate[UUID]], **kwargs: Any) -> Self:
        """Create the slot; its granted event names its run."""
        kwargs.setdefault("run_id", kwargs.get("for_run"))
        return super()._create(event_class, **kwargs)

    @staticmethod
    def create_id(slot_id: str) -> UUID:
        """The id is chosen by the grant (a fresh UUID)."""
        return UUID(slot_id)

    node_id: str | None = None
    """The worker node whose pool it holds a position of (None: before worker nodes)."""

    @event("Granted")
    def __init__(
        self,
        *,
        slot_id: str,
        company_id: str,
        for_run: str,
        agent_id: str,
        slot_type: str,
        index: int | None,
        trusted: bool,
        contained: bool,
        sandbox: str,
        granted_at: datetime,
        expires_at: datetime,
        node_id: str | None = None,
    ) -> None:
        self.company_id = company_id
        self.node_id = node_id
        self.run_id = for_run
        self.agent_id = agent_id
        self.slot_type = slot_type
        self.index = index
        self.trusted, self.contained, self.sandbox = trusted, contained, sandbox
        self.granted_at, self.expires_at = granted_at, expires_at
        self.state: SlotState = "granted"
        self.workspace_id: str | None = None
        self.issue_id: str | None = None
        self.pid: int | None = None
        self.pgid: int | None = None
        self.start_time: int | None = None
        self.slot_user: str | None = None
        self.cwd: str | None = None
        self.log_path: str | None = None
        self.started_at: datetime | None = None
        self.deadline: datetime | None = None
        self.end: str | None = None
        self.exit_code: int | None = None
        self.signal: str | None = None
        self.usage: dict[str, Any] | None = None
        self.result: Any = None
        self.stdout_excerpt: str | None = None
        self.stderr_excerpt: str | None = None
        self.log_bytes: int | None = None
        self.error: str | None = None
        self.group_gone = True
        self.finished_at: datetime | None = None
        self.released_at: datetime | None = None

    @property
    def held(self) -> bool:
        """Whether the slot still holds its pool position."""
        return self.state in LIVE_SLOT_STATES

    def start(
        self,
        *,
        workspace_id: str | None,
        issue_id: str | None,
        pid: int | None,
        pgid: int | None,
        start_time: int | None,
        slot_user: str | None,
        cwd: str | None,
        log_path: str | None,
        started_at: datetime,
        deadline: datetime,
    ) -> None:
        """The adapter started in the slot.

        Raises:
            StateConflictError: The slot is not ``granted`` (launched twice, or released).
        """
        if self.state != "granted":
            raise StateConflictError(
                f"The slot of run {self.run_id} is {self.state}: its adapter cannot start.",
                runId=self.run_id,
                slotId=str(self.id),
                state=self.state,
            )
        self._started(
            workspace_id=workspace_id,
            issue_id=issue_id,
            pid=pid,
            pgid=pgid,
            start_time=start_time,
            slot_user=slot_user,
            cwd=cwd,
            log_path=log_path,
            started_at=started_at,
            deadline=deadline,
        )

    @event("AdapterStarted")
    def _started(
        self,
        workspace_id: str | None,
        issue_id: str | None,
        pid: int | None,
        pgid: int | None,
        start_time: int | None,
        slot_user: str | None,
        cwd: str | None,
        log_path: str | None,
        started_at: datetime,
        deadline: datetime,
    ) -> None:
        self.state = "running"
        self.workspace_id, self.issue_id = workspace_id, issue_id
        self.pid, self.pgid, self.start_time = pid, pgid, start_time
        self.slot_user, self.cwd, self.log_path = slot_user, cwd, log_path
        self.started_at, self.deadline = started_at, deadline

    def finish(self, *, end: str, finished_at: datetime, **outcome: Any) -> bool:
        """Record how the adapter ended; a second report is ignored (returns False).

        Args:
            end: ``exited``, ``timed_out``, ``killed``, ``detached`` or ``launch_failed``.
            finished_at: When.
            **outcome: ``exit_code``, ``signal``, ``usage``, ``result``, ``stdout_excerpt``,
                ``stderr_excerpt``, ``log_bytes``, ``error``, ``group_gone``.

        A slot released before its adapter ever ended records nothing either.
        """
        if self.end is not None or self.state == "released":
            return False
        fields = {
            "exit_code": None,
            "signal": None,
            "usage": None,
            "result": None,
            "stdout_excerpt": None,
            "stderr_excerpt": None,
            "log_bytes": None,
            "error": None,
            "group_gone": True,
        }
        unknown = set(outcome) - set(fields)
        if unknown:
            raise TypeError(f"unknown outcome fields: {sorted(unknown)}")
        self._finished(end=end, finished_at=finished_at, **{**fields, **outcome})
        return True

    @event("AdapterFinished")
    def _finished(
        self,
        end: str,
        finished_at: datetime,
        exit_code: int | None,
        signal: str | None,
        usage: dict[str, Any] | None,
        result: Any,
        stdout_excerpt: str | None,
        stderr_excerpt: str | None,
        log_bytes: int | None,
        error: str | None,
        group_gone: bool,
    ) -> None:
        self.state = "finished"
        self.end, self.finished_at = end, finished_at
        self.exit_code, self.signal = exit_code, signal
        self.usage, self.result = usage, result
        self.stdout_excerpt, self.stderr_excerpt = stdout_excerpt, stderr_excerpt
        self.log_bytes, self.error, self.group_gone = log_bytes, error, group_gone

    def release(self, *, released_at: datetime, reason: str) -> bool:
        """Free the slot's pool position; a second release is ignored (returns False)."""
        if self.state == "released":
            return False
        self._released(released_at=released_at, release_reason=reason)
        return True

    @event("Released")
    def _released(self, released_at: datetime, release_reason: str) -> None:
        self.state = "released"
        self.released_at = released_at
