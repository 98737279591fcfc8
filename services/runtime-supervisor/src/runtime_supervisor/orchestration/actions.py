"""What each runtime control action does (reference §4.2 step 11, §6.5, §6.11): start, stop and
restart of the selected services with the desired-state patch, and a job run.

A start batch runs its services in parallel; when one fails, what that batch started is stopped,
the target's desired state becomes ``stopped`` for the selection, and the failure is raised. When
no service is named, a ``manual`` service index is neither started nor stopped (DECISIONS 7).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from runtime_supervisor.adapters.containment.workspaces import (
    job_unit,
    limits_of,
    run_contained_job,
)
from runtime_supervisor.adapters.outputs import finish_with_output, output_path
from runtime_supervisor.adapters.process import JOB_OUTPUT_CAP
from runtime_supervisor.domain import ServiceRecord, StateConflictError
from runtime_supervisor.domain.config.templates import render, resolve_cwd
from runtime_supervisor.domain.desired import desired_state_patch
from runtime_supervisor.domain.environment import service_env
from runtime_supervisor.domain.identity import require_cwd, template_values
from runtime_supervisor.domain.operations import lease_metadata
from runtime_supervisor.orchestration.progress import report_step
from runtime_supervisor.orchestration.provisioning import describe_job
from runtime_supervisor.orchestration.starting import Started, start_service
from runtime_supervisor.orchestration.stopping import stop_many

if TYPE_CHECKING:
    from runtime_supervisor.domain import RuntimeTarget
    from runtime_supervisor.domain.config.effective import EffectiveConfig, WorkspaceCommand
    from runtime_supervisor.domain.operations import OperationMetadata
    from runtime_supervisor.orchestration.context import Supervisor
    from runtime_supervisor.orchestration.control import ControlPlan

__all__ = ["ActionOutcome", "patch_desired", "run_job_action", "start_action", "stop_action"]


@dataclass
class ActionOutcome:
    """The operation recorded for an action and the lines its output shows."""

    operation: str
    lines: list[str] = field(default_factory=list)

    def stdout(self) -> bytes:
        """The operation's stdout: one line per service acted on."""
        return "".join(f"{line}\n" for line in self.lines).encode()


def patch_desired(
    sup: Supervisor,
    target: RuntimeTarget,
    effective: EffectiveConfig,
    action: Literal["start", "stop", "restart"],
    service_index: int | None,
) -> None:
    """On the store's thread: apply the desired-state patch of an action (reference §6.5)."""
    indexes = [s.service_index for s in effective.services if s.service_index is not None]
    if not indexes or (service_index is not None and service_index not in indexes):
        return
    desired, states = sup.app.desired(target)
    # Never set means ``running`` (what a run starts, DECISIONS 7): acting on one service leaves
    # the others as runs would start them.
    new_desired, new_states = desired_state_patch(
        indexes, desired or "running", states, action, service_index
    )
    sup.app.record_desired(target, new_desired, new_states)


def _manual(sup: Supervisor, target: RuntimeTarget) -> set[int]:
    _desired, states = sup.app.desired(target)
    return {int(index) for index, state in states.items() if state == "manual"}


def _to_stop(sup: Supervisor, plan: ControlPlan) -> list[ServiceRecord]:
    """On the store's thread: the live instances the selection names."""
    selection = plan.selection
    live = [r for r in sup.app.services_of(plan.target) if r.live]
    if selection.command is not None:
        return [
            r
            for r in live
            if r.workspace_command_id == selection.command.id
            or (r.service_index is not None and r.service_index == selection.service_index)
        ]
    if selection.runtime_service_id is not None:
        return [r for r in live if r.id == selection.runtime_service_id]
    manual = _manual(sup, plan.target)
    return [r for r in live if r.service_index not in manual]


def _describe(record: ServiceRecord, verb: str) -> str:
    where = f" on {record.url}" if record.url else ""
    return f"{verb} {record.service_name} (pid {record.pid}){where}"


def _stop_line(record: ServiceRecord) -> str:
    if record.status == "stopped":
        return _describe(record, "stopped")
    ended = record.last_error or record.status
    return f"{record.service_name} (pid {record.pid}) had already ended: {ended}"


async def stop_action(sup: Supervisor, plan: ControlPlan, outcome: ActionOutcome) -> None:
    """Stop the selected services (and, for ``stop``, patch the desired state first)."""
    if plan.selection.action == "stop":
        await sup.store(
            patch_desired, sup, plan.target, plan.effective, "stop", plan.selection.service_index
        )
    records: list[ServiceRecord] = await sup.store(_to_stop, sup, plan)
    reason = "restart" if plan.selection.action == "restart" else "manual stop"
    stopped = await stop_many(sup, records, reason=reason)
    survivors = [s for s in stopped if s.survivors]
    outcome.lines += [_stop_line(s.record) for s in stopped if not s.survivors]
    if not records:
        outcome.lines.append("no runtime service of the selection was running")
    if survivors:
        pids = ", ".join(str(p) for s in survivors for p in s.survivors)
        raise StateConflictError(
            f"Processes of runtime services survived SIGKILL: {pids}.",
            runtimeServiceIds=[s.record.id for s in survivors],
        )


async def start_action(
    sup: Supervisor, plan: ControlPlan, outcome: ActionOutcome, operation_id: str | None
) -> None:
    """Start the selected services as one batch, then patch the desired state."""
    selection, target = plan.selection, plan.target
    commands: list[WorkspaceCommand] = list(selection.commands)
    if selection.command is None:
        manual = await sup.store(_manual, sup, target)
        commands = [c for c in commands if c.service_index not in manual]
    results = await asyncio.gather(
        *(
            start_service(
                sup,
                target,
                c,
                run_id=plan.run_id,
                agent_id=plan.agent_id,
                lease=plan.run_id is not None,
                operation_id=operation_id,
            )
            for c in commands
        ),
        return_exceptions=True,
    )
    started = [r for r in results if isinstance(r, Started)]
    failures = [r for r in results if isinstance(r, BaseException)]
    outcome.lines += [_describe(s.record, "reused" if s.reused else "started") for s in started]
    if failures:
        fresh = [s.record for s in started if not s.reused]
        stopped = await stop_many(sup, fresh, reason="its start batch failed")
        outcome.lines += [_describe(s.record, "stopped") for s in stopped]
        if not sup.draining:  # a stop-all is no change of what the workspace wants
            await sup.store(
                patch_desired, sup, target, plan.effective, "stop", selection.service_index
            )
        raise failures[0]
    await sup.store(
        patch_desired, sup, target, plan.effective, selection.action, selection.service_index
    )


def _job_metadata(job: WorkspaceCommand, plan: ControlPlan) -> OperationMetadata:
    """The job operation's metadata: the command and the runtime lease it ran under."""
    return {
        "workspaceCommandKind": "job",
        "workspaceCommandId": job.id,
        "workspaceCommandName": job.name,
        "label": f'Workspace job "{job.name}"',
        "runtimeLease": lease_metadata(plan.lease),
    }


async def run_job_action(
    sup: Supervisor, plan: ControlPlan, operation_id: str | None
) -> ActionOutcome:
    """Run the selected job once as the action's operation (``Workspace job "<name>"``, output
    capped at 256 KiB per stream, ``truncated`` when cut)."""
    job, target = plan.selection.job, plan.target
    assert job is not None
    values = template_values(target, target.source_issue, plan.agent_id)
    cwd = resolve_cwd(require_cwd(target), job.cwd, values)
    env = service_env(
        sup.base_env,
        port=None,
        port_env_key=None,
        rendered_env={k: render(v, values) for k, v in job.env.items()},
    )
    timeout = job.timeout_sec or sup.settings.job_timeout
    metadata = _job_metadata(job, plan)
    op: str = await sup.store(
        sup.app.start_operation,
        target,
        phase="workspace_provision",
        command=job.command,
        cwd=str(cwd),
        issue_id=plan.issue_id,
        operation_id=operation_id,
        run_id=plan.run_id,
        metadata=metadata,
    )
    await report_step(sup, operation_id, target, op, f'job "{job.name}" started')
    try:
        result = await run_contained_job(
            sup,
            target,
            job_unit(op),
            limits_of(job.limits),
            command=job.command,
            cwd=cwd,
            env=env,
            timeout=timeout,
            cap=JOB_OUTPUT_CAP,
            live=output_path(sup.settings.home, op, "stdout").parent,
        )
    except Exception as exc:
        await finish_with_output(
            sup.app,
            sup.store,
            sup.settings.home,
            op,
            status="failed",
            exit_code=None,
            stdout=b"",
            stderr=f"{exc}\n".encode(),
        )
        raise
    ok = result.exit_code == 0 and not result.timed_out and not result.limit
    await finish_with_output(
        sup.app,
        sup.store,
        sup.settings.home,
        op,
        status="succeeded" if ok else "failed",
        exit_code=result.exit_code,
        stdout=result.stdout.encode(),
        stderr=result.stderr.encode(),
        truncated=result.truncated,
        metadata={
            "exitSignal": result.signal,
            "timedOut": result.timed_out,
            "outcome": describe_job(result, timeout),
            "stdoutTotalBytes": result.stdout_bytes,
            "stderrTotalBytes": result.stderr_bytes,
        },
    )
    await report_step(sup, operation_id, target, op, describe_job(result, timeout), percent=100)
    return ActionOutcome(operation=op, lines=[describe_job(result, timeout)])
