"""Runs: one agent invocation through the six stages of ARCHITECTURE §4.3 (reference §1.7, §7).

``queued`` (stage ``wakeup``) → ``running`` (``workspace_resolution``, ``slot_acquisition``,
``adapter_launch``, ``result_collection``) → ``cleanup`` → ``succeeded | failed | cancelled |
timed_out``. Every step is an event; a run holds at most one workspace's run lease at a time, or
waits for one in that workspace's FIFO. Nothing of the run token is ever recorded: the launch
keeps the slot, pids and deadline only.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final
from uuid import UUID, uuid4

import msgspec
from eventsourcing.domain import event

from contracts.agents import RunStageEntry, RunView
from eventstore import CompanyScoped, current_cause

if TYPE_CHECKING:
    from typing import Self

    from eventsourcing.domain import CanInitAggregate, CanMutateAggregate

    from heartbeat_controller.domain.records import (
        JsonObject,
        LaunchRecord,
        RunAbout,
        SlotRecord,
        StageDetailRecord,
    )
    from heartbeat_controller.domain.stage_detail import StageDetail

__all__ = ["FINISHED_STATUSES", "STAGES", "Run"]

STAGES: Final = (
    "wakeup",
    "workspace_resolution",
    "slot_acquisition",
    "adapter_launch",
    "result_collection",
    "cleanup",
)
FINISHED_STATUSES: Final = frozenset({"succeeded", "failed", "cancelled", "timed_out"})


def _cause_has_run() -> bool:
    cause = current_cause()
    return cause is not None and cause.run_id is not None


class Run(CompanyScoped):
    """One run of an agent (see the module's docstring)."""

    class Event(CompanyScoped.Event):
        """Base of a run's events."""

        about: RunAbout | None = dataclasses.field(default=None, kw_only=True)
        """The run's agent, issue and workspace at the time, so that the published event is
        built from the stored one alone."""

    def trigger_event(self, event_class: type[CanMutateAggregate[UUID]], **kwargs: Any) -> None:
        """Trigger an event stamped with what it is about (and the run, unless the cause
        names the run acted for)."""
        about: RunAbout = {
            "agent_id": self.agent_id,
            "issue_id": self.issue_id,
            "workspace_id": self.workspace_id,
        }
        kwargs.setdefault("about", about)
        if not _cause_has_run():
            kwargs.setdefault("run_id", str(self.id))
        super().trigger_event(event_class, **kwargs)

    @classmethod
    def _create(cls, event_class: type[CanInitAggregate[UUID]], **kwargs: Any) -> Self:
        """Create the run; its queued event names the run itself."""
        kwargs.setdefault("id", uuid4())
        if not _cause_has_run():
            kwargs.setdefault("run_id", str(kwargs["id"]))
        return super()._create(event_class, **kwargs)

    @classmethod
    def queue(cls, ident: UUID, **fields: Any) -> Run:
        """A new queued run with the id chosen by the caller (its wakeup request names it
        first); ``fields`` are those of ``__init__``."""
        return cls._create(cls.Queued, id=ident, **fields)  # type: ignore[attr-defined]

    @event("Queued")
    def __init__(
        self,
        *,
        company_id: str,
        agent_id: str,
        issue_id: str | None,
        wakeup_request_id: str,
        source: str,
        wake_reason: str | None,
        payload: JsonObject | None,
        at: datetime,
    ) -> None:
        self.company_id = company_id
        self.agent_id = agent_id
        self.issue_id = issue_id
        self.wakeup_request_id = wakeup_request_id
        self.wakeup_ids = [wakeup_request_id]
        self.source, self.wake_reason = source, wake_reason
        self.payload = dict(payload) if payload is not None else None
        self.status, self.stage = "queued", "wakeup"
        self.queued_at = self.created_at = self.updated_at = at
        self.stages: list[tuple[str, datetime]] = [("wakeup", at)]
        """Each stage entered and when, in order (the run page's timeline)."""
        self.started_at: datetime | None = None
        self.finished_at: datetime | None = None
        self.coalesced_count = 0
        self.workspace_id: str | None = None
        """The workspace whose run lease it holds or last held."""
        self.holds_workspace = False
        self.waiting_for: str | None = None
        """The workspace whose FIFO it waits in."""
        self.cancel_requested = False
        self.slot: SlotRecord | None = None
        self.launch: LaunchRecord | None = None
        """``slot_id``, ``pid``, ``pgid``, ``started_at``, ``deadline`` (never the token)."""
        self.end: str | None = None
        self.exit_code: int | None = None
        self.signal: str | None = None
        self.usage: JsonObject | None = None
        self.result: Any = None
        self.stdout_excerpt: str | None = None
        self.stderr_excerpt: str | None = None
        self.log_bytes: int | None = None
        self.adapter_error: str | None = None
        self.group_gone: bool | None = None
        self.error_code: str | None = None
        self.error: str | None = None

    # -- state ---------------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """True once the run ended."""
        return self.status in FINISHED_STATUSES

    @property
    def launched(self) -> bool:
        """True once its adapter started."""
        return self.launch is not None

    # -- the queue -----------------------------------------------------------------------------

    @event("WakeJoined")
    def join(self, wakeup_request_id: str, at: datetime) -> None:
        """Another wake for the same agent and issue joined this queued run (coalesced)."""
        self.wakeup_ids = [*self.wakeup_ids, wakeup_request_id]
        self.coalesced_count += 1
        self.updated_at = at

    def start(self, workspace_id: str | None, at: datetime) -> None:
        """Leave the queue: running, holding ``workspace_id``'s run lease if given, in stage
        ``workspace_resolution``."""
        self._started(workspace_id=workspace_id, at=at)
        if workspace_id is not None:
            self.lease(workspace_id, at)
        self.change_stage("workspace_resolution", None, at)

    @event("Started")
    def _started(self, workspace_id: str | None, at: datetime) -> None:
        self.status, self.started_at, self.updated_at = "running", at, at

    # -- stages and the workspace lease --------------------------------------------------------

    def change_stage(self, stage: str, detail: StageDetail | None, at: datetime) -> bool:
        """Enter ``stage``; False when already in it. ``detail`` is stored as its camelCase
        fields."""
        if stage == self.stage:
            return False
        plain: StageDetailRecord | None = (
            msgspec.to_builtins(detail) if detail is not None else None
        )
        self._stage_changed(stage=stage, previous_stage=self.stage, detail=plain, at=at)
        return True

    @event("StageChanged")
    def _stage_changed(
        self, stage: str, previous_stage: str, detail: StageDetailRecord | None, at: datetime
    ) -> None:
        self.stage, self.updated_at = stage, at
        # A snapshot taken before runs kept their stages has none: theirs start from here.
        self.stages = [*getattr(self, "stages", ()), (stage, at)]

    @event("WorkspaceLeased")
    def lease(self, workspace_id: str, at: datetime) -> None:
        """Take ``workspace_id``'s run lease (the caller checked it is free or handed over)."""
        self.workspace_id, self.holds_workspace, self.waiting_for = workspace_id, True, None
        self.updated_at = at

    def release(self, at: datetime) -> str | None:
        """Give the held run lease back; return its workspace (None when it held none)."""
        if not self.holds_workspace or self.workspace_id is None:
            return None
        workspace_id = self.workspace_id
        self._released(workspace_id=workspace_id, at=at)
        return workspace_id

    @event("WorkspaceReleased")
    def _released(self, workspace_id: str, at: datetime) -> None:
        self.holds_workspace, self.updated_at = False, at

    @event("WorkspaceAwaited")
    def wait_for(self, workspace_id: str, at: datetime) -> None:
        """Wait in ``workspace_id``'s FIFO for its run lease."""
        self.waiting_for, self.updated_at = workspace_id, at

    # -- slot, adapter, result -----------------------------------------------------------------

    @event("SlotGranted")
    def grant_slot(
        self,
        slot_id: str,
        slot_type: str,
        index: int | None,
        contained: bool,
        sandbox: str,
        at: datetime,
    ) -> None:
        """A slot was granted to the run."""
        self.slot = {
            "slot_id": slot_id,
            "type": slot_type,
            "index": index,
            "contained": contained,
            "sandbox": sandbox,
        }
        self.updated_at = at

    @event("AdapterLaunched")
    def record_launch(
        self,
        slot_id: str,
        pid: int | None,
        pgid: int | None,
        started_at: datetime,
        deadline: datetime,
        at: datetime,
    ) -> None:
        """The adapter started in its slot (pids and deadline only)."""
        self.launch = {
            "slot_id": slot_id,
            "pid": pid,
            "pgid": pgid,
            "started_at": started_at,
            "deadline": deadline,
        }
        self.updated_at = at

    @event("CancelRequested")
    def request_cancel(self, at: datetime) -> None:
        """Someone asked to cancel the run."""
        self.cancel_requested, self.updated_at = True, at

    @event("ResultCollected")
    def collect(
        self,
        *,
        end: str,
        exit_code: int | None,
        signal: str | None,
        usage: JsonObject | None,
        result: Any,
        stdout_excerpt: str | None,
        stderr_excerpt: str | None,
        log_bytes: int | None,
        error: str | None,
        group_gone: bool | None,
        at: datetime,
    ) -> None:
        """The adapter's end as the supervisor reported it."""
        self.end, self.exit_code, self.signal = end, exit_code, signal
        self.usage, self.result = usage, result
        self.stdout_excerpt, self.stderr_excerpt = stdout_excerpt, stderr_excerpt
        self.log_bytes, self.adapter_error, self.group_gone = log_bytes, error, group_gone
        self.updated_at = at

    def finish(self, status: str, error_code: str | None, error: str | None, at: datetime) -> None:
        """The run ended (after its cleanup); the event repeats the collected exit code."""
        self._finished(
            status=status, error_code=error_code, error=error, exit_code=self.exit_code, at=at
        )

    @event("Finished")
    def _finished(
        self,
        status: str,
        error_code: str | None,
        error: str | None,
        exit_code: int | None,
        at: datetime,
    ) -> None:
        self.status, self.error_code, self.error = status, error_code, error
        self.waiting_for = None
        self.finished_at = self.updated_at = at

    # -- view ----------------------------------------------------------------------------------

    def view(self, *, full: bool = True) -> RunView:
        """The run as the API shows it; list rows (``full=False``) carry no excerpts, usage or
        result."""
        return RunView(
            id=str(self.id),
            company_id=self.company_id,
            agent_id=self.agent_id,
            issue_id=self.issue_id,
            execution_workspace_id=self.workspace_id,
            wakeup_request_id=self.wakeup_request_id,
            source=self.source,  # type: ignore[arg-type]
            wake_reason=self.wake_reason,
            status=self.status,  # type: ignore[arg-type]
            stage=self.stage,  # type: ignore[arg-type]
            queued_at=self.queued_at,
            started_at=self.started_at,
            finished_at=self.finished_at,
            exit_code=self.exit_code,
            signal=self.signal,
            error_code=self.error_code,
            error=self.error,
            stdout_excerpt=self.stdout_excerpt if full else None,
            stderr_excerpt=self.stderr_excerpt if full else None,
            usage=self.usage if full else None,
            result=self.result if full else None,
            log_bytes=self.log_bytes,
            coalesced_count=self.coalesced_count,
            cancel_requested=self.cancel_requested,
            created_at=self.created_at,
            updated_at=self.updated_at,
            stages=[
                RunStageEntry(stage=stage, entered_at=entered)  # type: ignore[arg-type]
                for stage, entered in getattr(self, "stages", ())
            ]
            if full
            else [],
        )
