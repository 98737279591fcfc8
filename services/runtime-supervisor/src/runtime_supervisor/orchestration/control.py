"""The ``ControlRuntime`` use case (reference §4.2): start, stop or restart runtime services, or
run a job, on an execution or project workspace.

:func:`prepare` does every check that can refuse the request, before any long work is recorded:
the target in the principal's company, an agent's run holding it (else 403; agent keys and run
tokens as ``servicekit.access`` tells them, ARCHITECTURE §5.1), a local path (else
422), the selection (404/422, case 64) and, for agent actors, the runtime-control lease (409
``workspace_runtime_lease_conflict``, case 63). :func:`execute` then records one supervisor
workspace operation for the action, does it (:mod:`runtime_supervisor.orchestration.actions`), patches the
desired state and answers with the operation and the target's services.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from contracts.runtime_commands import (
    ControlRuntime,
    LeaseReclaim,
    RuntimeControlResult,
    RuntimeLeaseOutcome,
)
from runtime_supervisor.adapters.outputs import finish_with_output
from runtime_supervisor.domain import InvalidInputError, NotFoundError, RunBrief, RuntimeTarget
from runtime_supervisor.domain.config.effective import EffectiveConfig, effective_commands
from runtime_supervisor.domain.control_rules import Selection, select_targets
from runtime_supervisor.domain.identity import require_cwd
from runtime_supervisor.domain.leases import decide, owner_key
from runtime_supervisor.domain.operations import lease_metadata
from runtime_supervisor.orchestration.actions import (
    ActionOutcome,
    run_job_action,
    start_action,
    stop_action,
)
from runtime_supervisor.usecases.views import operation_row, provisioning_view, service_brief
from servicekit.access import Access, AccessDeniedError

if TYPE_CHECKING:
    from contracts.base import Principal
    from runtime_supervisor.application import RuntimeSupervisorApplication
    from runtime_supervisor.domain.operations import OperationMetadata
    from runtime_supervisor.orchestration.context import Supervisor

__all__ = [
    "ControlPlan",
    "early_holding_run",
    "execute",
    "holding_run",
    "prepare",
]


@dataclass(frozen=True, kw_only=True)
class ControlPlan:
    """A checked control request: what it acts on, for whom, and what the lease said."""

    principal: Principal
    target: RuntimeTarget
    effective: EffectiveConfig
    selection: Selection
    lease: RuntimeLeaseOutcome
    issue_id: str | None
    agent_id: str | None

    @property
    def run_id(self) -> str | None:
        """The run the action is made for."""
        return self.principal.run_id


def holding_run(
    app: RuntimeSupervisorApplication,
    principal: Principal,
    *,
    workspace_id: str | None,
    project_workspace_id: str | None,
) -> RunBrief:
    """The agent's run, which must hold the workspace (API.md "Conventions", ARCHITECTURE §5.1:
    agents control runtime services only while one of their runs holds the workspace).

    A project workspace's services are the agent's only while its run holds a *shared* workspace
    on that project workspace's checkout (an isolated worktree of the project gives no hold on
    the checkout the other issues share).

    Raises:
        AccessDeniedError: No such run of the agent's (as the copies say), or it does not
            hold the workspace (403).
    """
    access = Access.of(principal)
    run = app.run(principal.company_id, principal.run_id) if principal.run_id else None
    holds = run is not None and not run.terminal and access.owns_run(run.id, run.agent_id)
    if holds and run is not None and workspace_id is not None:
        holds = any(r.id == run.id for r in app.runs_holding(workspace_id))
    elif holds and run is not None:
        workspace = app.copy_of("workspace", run.workspace_id)
        holds = (
            workspace is not None
            and workspace.get("project_workspace_id") == project_workspace_id
            and workspace.get("mode") == "shared_workspace"
        )
    if not holds or run is None:
        raise AccessDeniedError(
            "An agent controls runtime services only for a run of its own that holds this "
            "workspace (send that run's id in X-Run-Id); a project workspace's services only "
            "while that run works in its shared checkout.",
            runId=principal.run_id,
            workspaceId=workspace_id or project_workspace_id,
        )
    return run


def early_holding_run(
    app: RuntimeSupervisorApplication,
    principal: Principal,
    *,
    workspace_id: str | None,
    project_workspace_id: str | None,
) -> RunBrief | None:
    """:func:`holding_run`, asked before any wait, when the copies already know the agent's run:
    a known contradiction (no run named; a finished run, another agent's, one on another
    workspace) is refused at once. A run the copies have not heard of yet answers None: the
    controller publishes its runs through its outbox while it hands the adapter its token
    directly, so an adapter's first request may come before its run; the caller then waits for
    the copies (``freshness.owned``) and :func:`prepare` decides.

    Raises:
        AccessDeniedError: The run is known (or none is named) and does not hold the workspace.
    """
    if principal.run_id is not None and app.copy_of("run", principal.run_id) is None:
        return None
    return holding_run(
        app, principal, workspace_id=workspace_id, project_workspace_id=project_workspace_id
    )


def _named_run(
    app: RuntimeSupervisorApplication, target: RuntimeTarget, principal: Principal
) -> RunBrief | None:
    """The run a board or system principal names (``X-Run-Id``): a run of the target's
    company that has not finished, since the services it starts are leased to it."""
    if principal.run_id is None:
        return None
    run = app.run(target.company_id, principal.run_id)
    if run is None:
        if app.copy_of("run", principal.run_id) is not None:  # another company's
            raise NotFoundError(f"There is no run {principal.run_id}.", runId=principal.run_id)
        raise InvalidInputError(
            f"X-Run-Id names a run this node has not heard of ({principal.run_id}); send the id "
            "of a run of this company that has started, or leave it out.",
            runId=principal.run_id,
            field="X-Run-Id",
        )
    app.check_lease_run(target.company_id, run.id)  # a finished run: 409
    return run


def _claim(
    app: RuntimeSupervisorApplication,
    plan_target: RuntimeTarget,
    principal: Principal,
    run: RunBrief | None,
    action: str,
) -> tuple[RuntimeLeaseOutcome, str | None]:
    actor = principal.actor
    agent_id = Access.of(principal).agent_id
    issue_id = principal.issue_id or (run.issue_id if run is not None else None)
    decision = decide(
        app.control_lease(plan_target),
        owner_key(actor.type, issue_id, principal.run_id, agent_id),
        issue_id=issue_id,
        run_id=principal.run_id,
        agent_id=agent_id,
        action=action,
        now=app.now(),
        issue_status=app.issue_status,
        run_status=app.run_status,
        execution_workspace_id=plan_target.execution_workspace_id,
    )
    app.claim_control_lease(plan_target, decision)  # a conflict raises the 409
    lease, taken_from = decision.lease, decision.reclaimed_from
    outcome = RuntimeLeaseOutcome(
        outcome=decision.outcome,  # type: ignore[arg-type]
        owner_key=lease.owner_key if lease else None,
        reclaimed_from=(
            LeaseReclaim(owner_key=taken_from["ownerKey"], reason=taken_from["reason"])
            if taken_from
            else None
        ),
        expires_at=lease.expires_at if lease else None,
    )
    return outcome, issue_id


def _prepare(sup: Supervisor, request: ControlRuntime) -> ControlPlan:
    """On the store's thread: every check, then the lease (recorded only once all passed)."""
    app, principal = sup.app, request.principal
    access = Access.of(principal)
    target = app.target(access.scope(), request.workspace_id, request.project_workspace_id)
    run: RunBrief | None
    if access.is_agent:
        run = holding_run(
            app,
            principal,
            workspace_id=target.execution_workspace_id,
            project_workspace_id=target.project_workspace_id,
        )
    else:
        run = _named_run(app, target, principal)
    if request.action != "stop":
        sup.check_accepting()
    require_cwd(target)
    effective = effective_commands(target.own_runtime, target.project_runtime)
    selection = select_targets(
        effective,
        request.action,
        workspace_command_id=request.workspace_command_id,
        service_index=request.service_index,
        runtime_service_id=request.runtime_service_id,
        service_rows=app.services_of(target, include_history=True),
    )
    lease, issue_id = _claim(app, target, principal, run, selection.action)
    return ControlPlan(
        principal=principal,
        target=target,
        effective=effective,
        selection=selection,
        lease=lease,
        issue_id=issue_id,
        agent_id=access.agent_id,
    )


async def prepare(sup: Supervisor, request: ControlRuntime) -> ControlPlan:
    """Check a control request and claim the lease (see the module's docstring).

    Raises:
        NotFoundError, AccessDeniedError, InvalidInputError, ControlError, LeaseConflictError.
    """
    plan: ControlPlan = await sup.store(_prepare, sup, request)
    return plan


def _metadata(plan: ControlPlan) -> OperationMetadata:
    selection = plan.selection
    command = selection.command
    return {
        "action": selection.action,
        "workspaceCommandKind": selection.kind,
        "workspaceCommandId": command.id if command else None,
        "workspaceCommandName": command.name if command else None,
        "serviceIndex": selection.service_index,
        "runtimeServiceId": selection.runtime_service_id,
        "runtimeLease": lease_metadata(plan.lease),
    }


async def execute(
    sup: Supervisor, plan: ControlPlan, operation_id: str | None
) -> RuntimeControlResult:
    """Do a prepared action as one supervisor workspace operation.

    Raises:
        StartFailedError, ProvisioningFailedError, PortConflictError, ...: The action failed
            (its operation is recorded ``failed`` first).
    """
    app, target, selection = sup.app, plan.target, plan.selection
    if selection.kind == "job":
        outcome = await run_job_action(sup, plan, operation_id)
    else:
        names = ", ".join(c.name for c in selection.commands) or "every service"
        op: str = await sup.store(
            app.start_operation,
            target,
            phase="workspace_teardown" if selection.action == "stop" else "workspace_provision",
            command=f"{selection.action} runtime services: {names}",
            cwd=target.cwd or "",
            issue_id=plan.issue_id,
            operation_id=operation_id,
            run_id=plan.run_id,
            metadata=_metadata(plan),
        )
        outcome = ActionOutcome(operation=op)
        try:
            if selection.action in ("stop", "restart"):
                await stop_action(sup, plan, outcome)
            if selection.action in ("start", "restart"):
                await start_action(sup, plan, outcome, operation_id)
        except Exception as exc:
            await finish_with_output(
                app,
                sup.store,
                sup.settings.home,
                op,
                status="failed",
                exit_code=None,
                stdout=outcome.stdout(),
                stderr=f"{exc}\n".encode(),
            )
            raise
        await finish_with_output(
            app,
            sup.store,
            sup.settings.home,
            op,
            status="succeeded",
            exit_code=0,
            stdout=outcome.stdout(),
            stderr=b"",
        )

    def answer() -> RuntimeControlResult:
        return RuntimeControlResult(
            operation=operation_row(app.operation(None, outcome.operation)),
            runtime_services=[service_brief(r, app.desired_of(r)) for r in app.services_of(target)],
            runtime_provisioning=provisioning_view(target, app.provisioning(target)),
            lease=plan.lease,
        )

    result: RuntimeControlResult = await sup.store(answer)
    return result
