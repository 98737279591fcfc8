"""Creating an execution workspace (ARCHITECTURE §4.1, reference §5.3): a record without a
checkout (adapter-managed, or no base), one on the project checkout (``project_primary``), or a
git worktree on a branch from the template, claimed under ``worktree:<path>`` and provisioned
when created."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from workspace_realizer.adapters.host_paths import check_worktree_parent_dir
from workspace_realizer.domain.host.records import WorkspaceConfig, WorkspaceRealization
from workspace_realizer.domain.policy import check_worktree_parent, render_branch, worktree_parent
from workspace_realizer.orchestration.clone import checkout_root, remote_auth
from workspace_realizer.orchestration.conflicts import saved_despite_conflicts
from workspace_realizer.orchestration.provision import provision_if, workspace_env
from workspace_realizer.usecases.host.claims import check_unclaimed, path_recorded, worktree_lock

WORKTREE_PARENT_STRATEGY = "workspaceStrategy.worktreeParentDir"
"""The setting a worktree parent is refused under when a workspace is made."""

if TYPE_CHECKING:
    from workspace_realizer.adapters.ports import BaseRef, WorktreeOutcome
    from workspace_realizer.domain.policy import Strategy
    from workspace_realizer.orchestration.context import Realizer
    from workspace_realizer.orchestration.steps import StepRecorder
    from workspace_realizer.usecases.host.planning import BaseCheckout, RealizePlan

__all__ = ["Realization", "create"]


@dataclass(frozen=True)
class Realization:
    """The workspace realized or reused, whether it was created, and the warnings."""

    workspace_id: str
    created: bool
    warnings: list[str] = field(default_factory=list)
    operation_ids: list[str] = field(default_factory=list)


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


async def create(ctx: Realizer, plan: RealizePlan, operation_id: str | None) -> Realization:
    """Create the issue's workspace as ``plan`` says: a record without a checkout, one on the
    project checkout, or a git worktree on a new (or attached) branch, provisioned when created."""
    workspace_id = str(uuid.uuid4())
    strategy = plan.resolution.strategy
    sink = ctx.recorder(
        company_id=plan.company_id,
        workspace_id=workspace_id,
        project_workspace_id=plan.base.id if plan.base else None,
        issue_id=plan.issue_id,
        operation_id=operation_id,
    )
    warnings = list(plan.resolution.warnings)
    # The facts known before the host work; each way of creating fills in its checkout.
    record = WorkspaceRealization(
        workspace_id=workspace_id,
        company_id=plan.company_id,
        project_id=plan.project_id,
        project_workspace_id=plan.base.id if plan.base else None,
        source_issue_id=plan.issue_id,
        mode=plan.resolution.mode,
        strategy_type=strategy.type,
        provider_type=strategy.type,
        provider_ref=None,
        name=plan.identifier,
        cwd=None,
        repo_url=plan.base.repo_url if plan.base else None,
        base_ref=None,
        base_ref_sha=None,
        branch_name=None,
        branch_created=False,
        created_worktree=False,
        node_id=ctx.node_id,
        config=_config(strategy),
        operation_id=operation_id,
        warnings=warnings,
    )
    if plan.base is None or strategy.type in ("adapter_managed", "cloud_sandbox"):
        await saved_despite_conflicts(
            ctx.store, ctx.app.record_realized, _no_checkout(record, plan, warnings)
        )
        return Realization(workspace_id, True, warnings, sink.ids)
    root = await checkout_root(ctx, plan.base, operation_id)
    if strategy.type != "git_worktree":
        await saved_despite_conflicts(
            ctx.store, ctx.app.record_realized, _shared(record, plan, root, warnings)
        )
        return Realization(workspace_id, True, warnings, sink.ids)
    auth = await remote_auth(ctx, plan.base, operation_id)
    configured = strategy.base_ref or plan.base.repo_ref
    base = await ctx.ports.git.resolve_base_ref(
        repo_root=root, configured=configured, auth=auth, sink=sink
    )
    branch = render_branch(strategy.branch_template, _template_values(plan, plan.base))
    # Checked again here, on the host that makes the worktree (symlinks resolved here, the
    # company's host access as it is now): where it was saved may be another host.
    grant = await ctx.store(ctx.app.host_grant, plan.base.company_id)
    check_worktree_parent_dir(strategy.worktree_parent_dir, grant, WORKTREE_PARENT_STRATEGY)
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
    record: WorkspaceRealization,
    source: tuple[Path, BaseRef, str],
    path: Path,
    warnings: list[str],
    sink: StepRecorder,
    operation_id: str | None,
) -> Realization:
    root, base, branch = source
    workspace_id = record.workspace_id
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
    realized = replace(
        record,
        provider_type="git_worktree",
        provider_ref=str(outcome.path),
        name=outcome.branch,
        cwd=str(outcome.path),
        base_ref=base.ref,
        base_ref_sha=base.sha,
        branch_name=outcome.branch,
        branch_created=branch_created,
        created_worktree=created,
        warnings=warnings,
    )
    await saved_despite_conflicts(ctx.store, ctx.app.record_realized, realized)
    env = workspace_env(plan, checkout, root, outcome.path, outcome.branch, base, created=created)
    await provision_if(
        ctx, workspace_id, created, strategy.provision_command, env, sink, operation_id
    )
    return Realization(workspace_id, True, warnings, sink.ids)


def _unstarted(outcome: WorktreeOutcome, base: BaseRef) -> bool:
    return outcome.refreshed_unstarted or (base.sha is not None and outcome.head_sha == base.sha)


def _config(strategy: Strategy) -> WorkspaceConfig:
    config: WorkspaceConfig = {}
    if strategy.provision_command:
        config["provisionCommand"] = strategy.provision_command
    if strategy.runtime_provision_command:
        config["runtimeProvisionCommand"] = strategy.runtime_provision_command
    if strategy.teardown_command:
        config["teardownCommand"] = strategy.teardown_command
    return config


def _no_checkout(
    record: WorkspaceRealization, plan: RealizePlan, warnings: list[str]
) -> WorkspaceRealization:
    kind = (
        plan.resolution.strategy.type
        if plan.resolution.strategy.type != "project_primary"
        else "adapter_managed"
    )
    return replace(
        record,
        provider_type=kind,
        provider_ref=None,
        name=f"{plan.identifier} ({kind})",
        cwd=None,
        base_ref=None,
        base_ref_sha=None,
        branch_name=None,
        branch_created=False,
        created_worktree=False,
        warnings=warnings,
        strategy_type=kind,
    )


def _shared(
    record: WorkspaceRealization, plan: RealizePlan, root: Path, warnings: list[str]
) -> WorkspaceRealization:
    return replace(
        record,
        provider_type="local_fs",
        provider_ref=None,
        name=f"{plan.identifier} (shared)",
        cwd=str(root),
        base_ref=plan.base.repo_ref if plan.base else None,
        base_ref_sha=None,
        branch_name=None,
        branch_created=False,
        created_worktree=False,
        warnings=warnings,
        strategy_type="project_primary",
    )
