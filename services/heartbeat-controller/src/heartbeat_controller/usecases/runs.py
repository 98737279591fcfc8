"""Use cases of runs: cancel (from a principal) and the lifecycle the orchestration records:
claim what may start, lease workspaces, stages, slot, launch, the adapter's end, the finish."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal

from contracts.agents import RunView
from heartbeat_controller.domain import (
    FINISHED_STATUSES,
    STAGES,
    RunFinishedError,
    StateConflictError,
)
from heartbeat_controller.domain.adapter_config import parse_adapter_config
from heartbeat_controller.domain.scheduling import AgentSnapshot, Candidate, Claim, runnable
from heartbeat_controller.domain.stage_detail import EndDetail
from heartbeat_controller.usecases.base import UseCaseBase
from servicekit.access import Access, Action, Resource

if TYPE_CHECKING:
    from datetime import datetime

    from eventsourcing.persistence import Tracking

    from contracts.base import Principal
    from contracts.slot_events import SlotAdapterFinished
    from contracts.slots import AdapterLaunched, RunSlot, SlotGrant
    from heartbeat_controller.domain.stage_detail import StageDetail

__all__ = ["LeaseOutcome", "RunUseCases"]

LeaseOutcome = Literal["held", "acquired", "waiting"]
_DEFAULT_CODES: Final = {"cancelled": "cancelled", "timed_out": "timed_out"}


class RunUseCases(UseCaseBase):
    """Runs: cancel and the lifecycle."""

    def request_cancel(self, principal: Principal, run_id: str) -> tuple[RunView, bool]:
        """Cancel a run: a queued one ends ``cancelled`` at once (cleanup recorded); a running
        one records ``RunCancelRequested`` and its run task must act.

        Returns:
            The run now, and whether the run task must act (kill the adapter / stop).

        Raises:
            NotFoundError: No such run in the company (nor the one the principal acts for).
            AccessDeniedError: The admin key (runs *control*, ARCHITECTURE §5.1), an agent key
                cancelling another agent's run (or acting for one: ``principal.run_id``), a run
                token another run than its own (403).
            RunFinishedError: 409 ``run_finished``.
        """
        access = Access.of(principal)
        access.reach(Resource.RUN, Action.CONTROL)
        seen = self.visible_run(access, run_id)
        access.check_run(run_id, seen.agent_id, "cancel")
        if seen.finished:
            raise RunFinishedError(
                f"Run {run_id} has already finished ({seen.status}).",
                runId=run_id,
                status=seen.status,
            )
        run = self._load_run(run_id)
        at = self.now()
        with self._acting_for(principal, "cancel requested"):
            if run.status == "queued":
                run.request_cancel(at)
                events, handed = self._finish_events(
                    run, "cancelled", "cancelled", "Cancelled before it started.", at
                )
                self.save(*events)
                self._handed(handed)
                return self.runs[run_id].view(), False
            if not run.cancel_requested:
                run.request_cancel(at)
                self.save(run)
        return self.runs[run_id].view(), True

    # -- runs: the lifecycle (orchestration) ----------------------------------------------------

    def claim_runnable(self, now: datetime) -> list[Claim]:
        """Start the queued runs that may start (:func:`heartbeat_controller.domain.scheduling.runnable`):
        ``RunStarted``, ``RunWorkspaceLeased`` on the issue's current workspace when it has one,
        stage ``workspace_resolution``; their wakeup requests ``claimed``. One save.

        Returns:
            The started runs, in queue order.
        """
        candidates = []
        for run_id in self.queued:
            run = self.runs[run_id]
            copy = self.issues.get(run.issue_id) if run.issue_id else None
            workspace = (
                copy.execution_workspace_id if copy is not None and not copy.deleted else None
            )
            candidates.append(Candidate(run_id, run.agent_id, workspace))
        chosen = runnable(
            candidates,
            {agent: len(ids) for agent, ids in self.running_by_agent.items()},
            {k: a.max_concurrent_runs for k, a in self.agents.items() if not a.deleted},
            set(self.workspace_holders) | set(self.workspace_waiters),
        )
        claims: list[Claim] = []
        objs: list[Any] = []
        for pick in chosen:
            run = self._load_run(pick.run_id)
            with self._system("run started", pick.run_id):
                run.start(pick.workspace_id, now)
                wakeups = [self._load(w) for w in run.wakeup_ids]
                for wakeup in wakeups:
                    wakeup.claim(now)
            objs += [run, *wakeups]
            agent = self.agents[run.agent_id]
            snapshot = AgentSnapshot(
                agent_id=run.agent_id,
                name=agent.name,
                adapter_type=agent.adapter_type,
                adapter_config=parse_adapter_config(agent.adapter_type, agent.adapter_config),
                trusted=agent.trusted,
            )
            claims.append(
                Claim(
                    run_id=pick.run_id,
                    company_id=run.company_id,
                    agent=snapshot,
                    issue_id=run.issue_id,
                    workspace_id=pick.workspace_id,
                    source=run.source,
                    wake_reason=run.wake_reason,
                    payload=run.payload,
                )
            )
        if objs:
            self.save(*objs)
        return claims

    def lease_workspace(self, run_id: str, workspace_id: str) -> LeaseOutcome:
        """Make the running run hold ``workspace_id``'s run lease (the workspace it realized).

        ``held``: it holds it already. ``acquired``: it was free and nobody waited. ``waiting``:
        another run holds it; this one waits in its FIFO and is handed the lease when the holder
        finishes (:meth:`finish_run`'s answer, ``on_workspace_handed``). A run holding another
        workspace gives that one back first (handed to that workspace's first waiter).

        Raises:
            NotFoundError: Unknown run.
            StateConflictError: The run is not running.
        """
        run = self._load_run(run_id)
        if run.status != "running":
            raise StateConflictError(
                f"Run {run_id} is {run.status}: only a running run holds a workspace.",
                runId=run_id,
            )
        if run.holds_workspace and run.workspace_id == workspace_id:
            return "held"
        at = self.now()
        events: list[Any] = []
        handed: list[str] = []
        outcome: LeaseOutcome
        with self._system("workspace lease", run_id):
            released = run.release(at)
            events += run.collect_events()
            if released is not None:
                handed, more = self._hand_over(released, at)
                events += more
            holder = self.workspace_holders.get(workspace_id)
            waiters = [w for w in self.workspace_waiters.get(workspace_id, []) if w != run_id]
            if (holder is None or holder == run_id) and not waiters:
                run.lease(workspace_id, at)
                outcome = "acquired"
            else:
                if run.waiting_for != workspace_id:
                    run.wait_for(workspace_id, at)
                outcome = "waiting"
            events += run.collect_events()
        self._save_events(events, None)
        self._handed(handed)
        return outcome

    def record_stage(self, run_id: str, stage: str, detail: StageDetail | None = None) -> bool:
        """Record that the run entered ``stage`` (``RunStageChanged`` with ``detail``).

        Returns:
            False when nothing was recorded (the run finished, or is in that stage already).
        """
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}")
        run = self._load_run(run_id)
        if run.finished:
            return False
        with self._system(f"stage {stage}", run_id):
            changed = run.change_stage(stage, detail, self.now())
        if changed:
            self.save(run)
        return changed

    def record_slot(self, run_id: str, grant: SlotGrant) -> bool:
        """Record the slot granted to the run (False when the run already finished)."""
        run = self._load_run(run_id)
        if run.finished:
            return False
        with self._system("slot granted", run_id):
            run.grant_slot(
                slot_id=grant.slot_id,
                slot_type=grant.type,
                index=grant.index,
                contained=grant.contained,
                sandbox=grant.sandbox,
                at=self.now(),
            )
        self.save(run)
        return True

    def record_launch(self, run_id: str, launched: AdapterLaunched) -> bool:
        """Record the adapter's start: slot, pids, deadline (never the token or environment).
        False when the run already finished."""
        run = self._load_run(run_id)
        if run.finished:
            return False
        with self._system("adapter launched", run_id):
            run.record_launch(
                slot_id=launched.slot_id,
                pid=launched.pid,
                pgid=launched.pgid,
                started_at=launched.started_at,
                deadline=launched.deadline,
                at=self.now(),
            )
        self.save(run)
        return True

    def record_adapter_end(
        self, event: SlotAdapterFinished, tracking: Tracking | None
    ) -> RunView | None:
        """Record the supervisor's ``slot.adapter_finished.v1`` on its run (stage
        ``result_collection`` if the run was not there yet), with ``tracking``. The run task
        then decides the outcome and calls :meth:`finish_run`.

        Returns:
            The run now, or None when the event changed nothing (unknown or finished run, end
            already collected): only ``tracking`` is saved then.
        """
        return self._collect(event.run_id, event, event.group_gone, tracking)

    def record_slot_end(self, slot: RunSlot) -> RunView | None:
        """Record a finished slot's end (the supervisor's answer to ``KillAdapter`` or
        ``GetRunSlot``) when its ``slot.adapter_finished.v1`` did not come: exit code, signal,
        usage, result, excerpts and log size, as :meth:`record_adapter_end` does.

        Returns:
            The run now, or None when nothing was recorded (no end in the slot, unknown or
            finished run, end already collected).
        """
        if slot.end is None:
            return None
        return self._collect(slot.run_id, slot, None, None)

    def _collect(
        self, run_id: str | None, end: Any, group_gone: bool | None, tracking: Tracking | None
    ) -> RunView | None:
        if run_id is None or run_id not in self.runs:
            self._save_events([], tracking)
            return None
        run = self._load_run(run_id)
        if run.finished or run.end is not None:
            self._save_events([], tracking)
            return None
        at = self.now()
        with self._system(f"adapter {end.end}", run_id):
            if STAGES.index(run.stage) < STAGES.index("result_collection"):
                run.change_stage("result_collection", EndDetail(end=end.end), at)
            run.collect(
                end=end.end,
                exit_code=end.exit_code,
                signal=end.signal,
                usage=end.usage,
                result=end.result,
                stdout_excerpt=end.stdout_excerpt,
                stderr_excerpt=end.stderr_excerpt,
                log_bytes=end.log_bytes,
                error=end.error,
                group_gone=group_gone,
                at=at,
            )
        self._save_events(list(run.collect_events()), tracking)
        return self.runs[run_id].view()

    def finish_run(
        self,
        run_id: str,
        status: str,
        *,
        error_code: str | None = None,
        error: str | None = None,
    ) -> list[str]:
        """End a run after its cleanup: stage ``cleanup`` (if not yet), its workspace lease
        released and handed to the first waiting run, its wakeup requests closed, then
        ``RunFinished`` last, all in one save. A finished run: nothing happens.

        Returns:
            The runs that now hold the workspace they waited for.
        """
        if status not in FINISHED_STATUSES:
            raise ValueError(f"{status!r} is not a finished status")
        run = self._load_run(run_id)
        if run.finished:
            return []
        with self._system(f"run {status}", run_id):
            events, handed = self._finish_events(
                run, status, error_code or _DEFAULT_CODES.get(status), error, self.now()
            )
        self.save(*events)
        self._handed(handed)
        return handed
