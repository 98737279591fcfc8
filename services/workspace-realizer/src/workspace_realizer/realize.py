"""Realization (ARCHITECTURE §4.1, reference §5): reuse the issue's open workspace, or create one.

The plan is taken on the store's thread; git and commands run through the host ports off it; each
result is saved through the store. One realization per issue at a time; git work on one
repository is serialized by the git adapter.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace_realizer.claims import (
    check_unclaimed,
    current_reusable,
    path_recorded,
    worktree_lock,
)
from workspace_realizer.clone import checkout_root, remote_auth
from workspace_realizer.domain.errors import WorkspaceRealizerError
from workspace_realizer.isolation import check_isolation
from workspace_realizer.planning import RealizePlan, WorkspaceSnapshot, plan_realization
from workspace_realizer.policy import check_worktree_parent, render_branch, worktree_parent
from workspace_realizer.provision import WorkspaceEnv, run_provision

if TYPE_CHECKING:
    from servicekit.access import Access
    from workspace_realizer.adapters.ports import BaseRef, StepSink, WorktreeOutcome
    from workspace_realizer.application import WorkspaceRealizerApplication
    from workspace_realizer.context import Realizer
    from workspace_realizer.planning import BaseCheckout
    from workspace_realizer.steps import StepRecorder

__all__ = ["Realization", "RealizeRequest", "realize", "refuse_unisolated"]


@dataclass(frozen=True)
class RealizeRequest:
    """What to realize: the issue, and optionally a mode, a pinned workspace, the agent, and
    whether only an isolated worktree will do (an untrusted agent's run, DECISIONS 11)."""

    issue_id: str
    mode: str | None = None
    workspace_id: str | None = None
    agent_id: str | None = None
    require_isolation: bool = False


@dataclass(frozen=True)
class Realization:
    """The workspace realized or reused, whether it was created, and the warnings."""

    workspace_id: str
    created: bool
    warnings: list[str] = field(default_factory=list)
    operation_ids: list[str] = field(default_factory=list)


async def realize(
    ctx: Realizer, access: Access, request: RealizeRequest, operation_id: str | None = None
) -> Realization:
    """Realize (or reuse) the issue's execution workspace."""
    async with ctx.locks.hold(f"issue:{request.issue_id}"):
        plan = await ctx.store(
            plan_realization,
            ctx.app,
            access,
            request.issue_id,
            request.mode,
            request.workspace_id,
            request.agent_id,
        )
        if request.require_isolation:
            check_isolation(plan)
        if plan.reuse is not None:
            # The archive saga and reopen hold ``workspace:<id>``: hold it too, and re-check
            # (open, same generation) under it before any host work.
            async with ctx.locks.hold(f"workspace:{plan.reuse.id}"):
                reuse = await ctx.store(current_reusable, ctx.app, plan.reuse)
                return await _reuse(ctx, plan, reuse, operation_id)
        return await _create(ctx, plan, operation_id)


def refuse_unisolated(
    app: WorkspaceRealizerApplication, access: Access, request: RealizeRequest
) -> None:
    """On the store's thread, before an operation is recorded: the issue must be the
    principal's, and a realization that requires isolation must resolve to an isolated worktree.

    Other refusals of the plan are left to :func:`realize`, which reports them as it always did.

    Raises:
        NotFoundError: No such issue.
        NotVisibleError: The issue is another company's.
        AccessDeniedError: An agent key reaches an issue not assigned to its agent, or a run
            token another issue than its run's.
        LowTrustViolationError: Isolation is required and the plan is not isolated.
    """
    app.issue_of(access, request.issue_id)
    if not request.require_isolation:
        return
    try:
        plan = plan_realization(
            app, access, request.issue_id, request.mode, request.workspace_id, request.agent_id
        )
    except WorkspaceRealizerError:
        return
    check_isolation(plan)


def _template_values(plan: RealizePlan, base: BaseCheckout) -> dict[str, str]:
    return {
        "issue.id": plan.issue_id,
        "issue.identifier": plan.identifier,
        "issue.title": plan.title,
        "agent.id": plan.agent_id or "",
        "agent.name": "",
        "project.id": plan.project_id,
        "workspace.repoRef": base.repo_ref or "",
    }


async def _create(ctx: Realizer, plan: RealizePlan, operation_id: str | None) -> Realization:
    workspace_id = str(uuid.uuid4())
    strategy = plan.resolution.strategy
    sink = ctx.recorder(
        company_id=plan.company_id,
        workspace_id=workspace_id,
        project_workspace_id=plan.base.id if plan.base else None,
        issue_id=plan.issue_id,
        operation_id=operation_id,
    )
    record: dict[str, Any] = {
        "workspace_id": workspace_id,
        "company_id": plan.company_id,
        "project_id": plan.project_id,
        "project_workspace_id": plan.base.id if plan.base else None,
        "source_issue_id": plan.issue_id,
        "mode": plan.resolution.mode,
        "strategy_type": strategy.type,
        "node_id": ctx.node_id,
        "operation_id": operation_id,
        "config": _config(strategy),
        "repo_url": plan.base.repo_url if plan.base else None,
    }
    warnings = list(plan.resolution.warnings)
    if plan.base is None or strategy.type in ("adapter_managed", "cloud_sandbox"):
        await ctx.store(ctx.app.record_realized, _no_checkout(record, plan, warnings))
        return Realization(workspace_id, True, warnings, sink.ids)
    root = await checkout_root(ctx, plan.base, operation_id)
    if strategy.type != "git_worktree":
        await ctx.store(ctx.app.record_realized, _shared(record, plan, root, warnings))
        return Realization(workspace_id, True, warnings, sink.ids)
    auth = await remote_auth(ctx, plan.base, operation_id)
    configured = strategy.base_ref or plan.base.repo_ref
    base = await ctx.ports.git.resolve_base_ref(
        repo_root=root, configured=configured, auth=auth, sink=sink
    )
    branch = render_branch(strategy.branch_template, _template_values(plan, plan.base))
    parent = worktree_parent(strategy, home=ctx.home, project_workspace_id=plan.base.id)
    check_worktree_parent(parent, [Path(p) for p in plan.protected])
    async with ctx.locks.hold(worktree_lock(str(parent / branch))):
        return await _create_worktree(
            ctx,
            plan,
            plan.base,
            record,
            (root, base, branch),
            parent / branch,
            warnings,
            sink,
            operation_id,
        )


async def _create_worktree(
    ctx: Realizer,
    plan: RealizePlan,
    checkout: BaseCheckout,
    record: dict[str, Any],
    source: tuple[Path, BaseRef, str],
    path: Path,
    warnings: list[str],
    sink: StepRecorder,
    operation_id: str | None,
) -> Realization:
    root, base, branch = source
    workspace_id = record["workspace_id"]
    strategy = plan.resolution.strategy
    await ctx.store(
        check_unclaimed, ctx.app, path=str(path), branch=branch, project_workspace_id=checkout.id
    )
    recorded = await ctx.store(path_recorded, ctx.app, str(path))
    outcome = await ctx.ports.git.ensure_worktree(
        repo_root=root, path=path, base=base, branch=branch, sink=sink
    )
    created, branch_created = (
        outcome.created,
        outcome.created and not outcome.reused_existing_branch,
    )
    if not created and not recorded and _unstarted(outcome, base):
        # A worktree at the planned path, on the planned branch, still at its base, that no
        # workspace records: an earlier attempt created it and stopped before recording it.
        created = branch_created = True
    warnings += [*base.warnings, *outcome.warnings]
    record |= {
        "provider_type": "git_worktree",
        "provider_ref": str(outcome.path),
        "name": outcome.branch,
        "cwd": str(outcome.path),
        "base_ref": base.ref,
        "base_ref_sha": base.sha,
        "branch_name": outcome.branch,
        "branch_created": branch_created,
        "created_worktree": created,
        "warnings": warnings,
    }
    await ctx.store(ctx.app.record_realized, record)
    env = _env(plan, checkout, root, outcome.path, outcome.branch, base, created=created)
    await _provision_if_created(
        ctx, workspace_id, created, strategy.provision_command, env, sink, operation_id
    )
    return Realization(workspace_id, True, warnings, sink.ids)


def _unstarted(outcome: WorktreeOutcome, base: BaseRef) -> bool:
    return outcome.refreshed_unstarted or (base.sha is not None and outcome.head_sha == base.sha)


async def _reuse(
    ctx: Realizer, plan: RealizePlan, reuse: WorkspaceSnapshot, operation_id: str | None
) -> Realization:
    warnings = list(plan.resolution.warnings)
    sink = ctx.recorder(
        company_id=plan.company_id,
        workspace_id=reuse.id,
        project_workspace_id=reuse.project_workspace_id,
        issue_id=plan.issue_id,
        operation_id=operation_id,
    )
    rebuilt = False
    if not reuse.is_worktree and plan.base is not None and reuse.path:
        await checkout_root(ctx, plan.base, operation_id)  # a missing managed clone comes back
    if reuse.is_worktree and plan.base is not None and reuse.path and reuse.branch_name:
        root = await checkout_root(ctx, plan.base, operation_id)
        auth = await remote_auth(ctx, plan.base, operation_id)
        base = await ctx.ports.git.resolve_base_ref(
            repo_root=root, configured=reuse.base_ref, auth=auth, sink=sink
        )
        outcome = await ctx.ports.git.ensure_worktree(
            repo_root=root, path=Path(reuse.path), branch=reuse.branch_name, base=base, sink=sink
        )
        warnings += [*base.warnings, *outcome.warnings]
        rebuilt = outcome.created
        env = _env(plan, plan.base, root, outcome.path, outcome.branch, base, created=rebuilt)
        # ``none`` on a worktree: provisioning never finished (a crash or a cancel after the
        # creation was recorded); ``failed``: it failed. Both run it again.
        again = rebuilt or reuse.provision_state in ("none", "failed")
        await _provision_if_created(
            ctx, reuse.id, again, reuse.config.get("provisionCommand"), env, sink, operation_id
        )
    await ctx.store(
        ctx.app.record_reused, reuse.id, plan.issue_id, rebuilt=rebuilt, warnings=warnings
    )
    return Realization(reuse.id, False, warnings, sink.ids)


async def _provision_if_created(
    ctx: Realizer,
    workspace_id: str,
    created: bool,
    command: str | None,
    env: WorkspaceEnv,
    sink: StepSink,
    operation_id: str | None,
) -> None:
    if created:
        await run_provision(
            ctx,
            workspace_id=workspace_id,
            command=command,
            env=env,
            sink=sink,
            operation_id=operation_id,
        )


def _env(
    plan: RealizePlan,
    base: BaseCheckout,
    root: Path,
    path: Path,
    branch: str,
    base_ref: BaseRef,
    *,
    created: bool,
) -> WorkspaceEnv:
    return WorkspaceEnv(
        company_id=plan.company_id,
        project_id=plan.project_id,
        issue_id=plan.issue_id,
        issue_identifier=plan.identifier,
        cwd=str(path),
        branch=branch,
        base_cwd=str(root),
        repo_root=str(root),
        repo_ref=base_ref.ref,
        repo_url=base.repo_url,
        created=created,
    )


def _config(strategy: Any) -> dict[str, Any]:
    config = {
        "provisionCommand": strategy.provision_command,
        "runtimeProvisionCommand": strategy.runtime_provision_command,
        "teardownCommand": strategy.teardown_command,
    }
    return {key: value for key, value in config.items() if value}


def _no_checkout(record: dict[str, Any], plan: RealizePlan, warnings: list[str]) -> dict[str, Any]:
    kind = (
        plan.resolution.strategy.type
        if plan.resolution.strategy.type != "project_primary"
        else "adapter_managed"
    )
    return record | {
        "provider_type": kind,
        "provider_ref": None,
        "name": f"{plan.identifier} ({kind})",
        "cwd": None,
        "base_ref": None,
        "base_ref_sha": None,
        "branch_name": None,
        "branch_created": False,
        "created_worktree": False,
        "warnings": warnings,
        "strategy_type": kind,
    }


def _shared(
    record: dict[str, Any], plan: RealizePlan, root: Path, warnings: list[str]
) -> dict[str, Any]:
    return record | {
        "provider_type": "local_fs",
        "provider_ref": None,
        "name": f"{plan.identifier} (shared)",
        "cwd": str(root),
        "base_ref": plan.base.repo_ref if plan.base else None,
        "base_ref_sha": None,
        "branch_name": None,
        "branch_created": False,
        "created_worktree": False,
        "warnings": warnings,
        "strategy_type": "project_primary",
    }
