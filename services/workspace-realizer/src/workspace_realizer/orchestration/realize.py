"""Realization (ARCHITECTURE §4.1, reference §5): reuse the issue's open workspace, or create one.

The plan is taken on the store's thread; git and commands run through the host ports off it; each
result is saved through the store. One realization per issue at a time; git work on one
repository is serialized by the git adapter.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from workspace_realizer.domain.errors import WorkspaceRealizerError
from workspace_realizer.domain.host.isolation import check_isolation
from workspace_realizer.orchestration.clone import checkout_root, remote_auth
from workspace_realizer.orchestration.conflicts import saved_despite_conflicts
from workspace_realizer.orchestration.create import Realization, create
from workspace_realizer.orchestration.provision import provision_if, workspace_env
from workspace_realizer.usecases.host.claims import current_reusable
from workspace_realizer.usecases.host.planning import plan_realization

if TYPE_CHECKING:
    from servicekit.access import Access
    from workspace_realizer.application import WorkspaceRealizerApplication
    from workspace_realizer.orchestration.context import Realizer
    from workspace_realizer.usecases.host.planning import RealizePlan, WorkspaceSnapshot

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
        return await create(ctx, plan, operation_id)


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
        env = workspace_env(
            plan, plan.base, root, outcome.path, outcome.branch, base, created=rebuilt
        )
        # ``none`` on a worktree: provisioning never finished (a crash or a cancel after the
        # creation was recorded); ``failed``: it failed. Both run it again.
        again = rebuilt or reuse.provision_state in ("none", "failed")
        await provision_if(
            ctx, reuse.id, again, reuse.config.get("provisionCommand"), env, sink, operation_id
        )
    # A run's lease or an issue change saved by another replica may come first: load, save again.
    await saved_despite_conflicts(
        ctx.store,
        ctx.app.record_reused,
        reuse.id,
        plan.issue_id,
        rebuilt=rebuilt,
        warnings=warnings,
    )
    return Realization(reuse.id, False, warnings, sink.ids)
