"""Endpoints of execution workspaces: realize, change (archive and reopen included), reads.

Realize, archive and reopen run through the service's operation runner: they answer with their
result when they end before the request's deadline, else ``accepted {operationId}``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

import contracts.workspace_subjects as subjects
from contracts.execution_commands import (
    ArchiveWorkspace,
    GetCloseReadiness,
    GetExecutionWorkspace,
    ListExecutionWorkspaces,
    ListExecutionWorkspaceSummaries,
    RealizeWorkspace,
    ReconcileBranch,
    ReopenWorkspace,
    UpdateExecutionWorkspace,
    WorkspaceFilters,
)
from contracts.execution_views import BranchInspection, RealizeResult, ReconcileResult
from contracts.workspace_views import Page
from eventstore import acting
from servicekit.access import Access, Action, Resource
from workspace_realizer.archive import archive
from workspace_realizer.endpoints.common import Endpoints, builtins, cause_of, changes
from workspace_realizer.facts import assess, gather, inspect
from workspace_realizer.realize import RealizeRequest, realize, refuse_unisolated
from workspace_realizer.reconcile import reconcile_branch
from workspace_realizer.reopen import reopen
from workspace_realizer.views import (
    readiness_view,
    rescue_view,
    summary_view,
    workspace_row,
    workspace_view,
)

if TYPE_CHECKING:
    from contracts.base import Accepted, Principal
    from contracts.execution_views import (
        CloseReadiness,
        ExecutionWorkspace,
        ExecutionWorkspaceRow,
        ExecutionWorkspaceSummary,
    )
    from natsbus import RequestContext

__all__ = ["register_workspaces"]

_PATCH = {"name": "name", "config": "config", "cleanup_eligible_at": "cleanup_eligible_at"}


T = TypeVar("T")

WORKSPACE = Resource.EXECUTION_WORKSPACE


async def register_workspaces(e: Endpoints) -> None:
    """Add the execution-workspace endpoints."""
    app, realizer = e.app, e.realizer

    async def view(workspace_id: str) -> ExecutionWorkspace:
        return await e.runtime.store(lambda: workspace_view(app, app.workspaces[workspace_id]))

    async def long(
        access: Access,
        principal: Principal,
        kind: str,
        subject: str,
        ctx: RequestContext,
        work: Callable[[str], Awaitable[T]],
        visible: Callable[[Access], object] | None,
    ) -> T | Accepted:
        # ``access`` was allowed the endpoint's resource and action. ``visible`` refuses what
        # the principal may not see before any operation is recorded: a request for another
        # company's issue or workspace writes nothing (404); None when the caller checked.
        if visible is not None:
            await e.run(access, visible)
        with acting(cause_of(principal, kind)):
            return await e.runtime.operations.run(
                kind,
                work,
                ctx=ctx,
                principal=principal,
                company_id=principal.company_id,
                subject_id=subject,
            )

    def seen(workspace_id: str) -> Callable[[Access], object]:
        return lambda a: app.workspace_of(a, workspace_id)

    async def realize_(c: RealizeWorkspace, ctx: RequestContext) -> RealizeResult | Accepted:
        access = e.allow(c.principal, Resource.ISSUE, Action.CONTROL)
        request = RealizeRequest(
            c.issue_id, c.mode, c.execution_workspace_id, c.agent_id, c.require_isolation
        )

        async def work(operation_id: str) -> RealizeResult:
            done = await realize(realizer, access, request, operation_id)
            workspace = await view(done.workspace_id)
            return RealizeResult(workspace=workspace, created=done.created, warnings=done.warnings)

        return await long(
            access,
            c.principal,
            "realize",
            c.issue_id,
            ctx,
            work,
            lambda a: refuse_unisolated(app, a, request),
        )

    # Changing a workspace (archive, reopen and reconcile included) is the board's: the table
    # gives agents no write of execution workspaces, so ``allow`` refuses them first.

    async def archive_as(
        access: Access,
        principal: Principal,
        workspace_id: str,
        expected: int | None,
        ctx: RequestContext,
        visible: Callable[[Access], object] | None,
    ) -> ExecutionWorkspace | Accepted:
        async def work(operation_id: str) -> ExecutionWorkspace:
            await archive(
                realizer,
                access,
                workspace_id,
                expected_generation=expected,
                operation_id=operation_id,
            )
            return await view(workspace_id)

        return await long(access, principal, "archive", workspace_id, ctx, work, visible)

    async def reopen_as(
        access: Access,
        principal: Principal,
        workspace_id: str,
        expected: int | None,
        ctx: RequestContext,
        visible: Callable[[Access], object] | None,
    ) -> ExecutionWorkspace | Accepted:
        async def work(operation_id: str) -> ExecutionWorkspace:
            await reopen(
                realizer,
                access,
                workspace_id,
                expected_generation=expected,
                operation_id=operation_id,
            )
            return await view(workspace_id)

        return await long(access, principal, "reopen", workspace_id, ctx, work, visible)

    async def archive_(c: ArchiveWorkspace, ctx: RequestContext) -> ExecutionWorkspace | Accepted:
        access = e.allow(c.principal, WORKSPACE, Action.WRITE)
        return await archive_as(
            access, c.principal, c.workspace_id, c.expected_generation, ctx, seen(c.workspace_id)
        )

    async def reopen_(c: ReopenWorkspace, ctx: RequestContext) -> ExecutionWorkspace | Accepted:
        access = e.allow(c.principal, WORKSPACE, Action.WRITE)
        return await reopen_as(
            access, c.principal, c.workspace_id, c.expected_generation, ctx, seen(c.workspace_id)
        )

    async def reconcile(c: ReconcileBranch, ctx: RequestContext) -> ReconcileResult | Accepted:
        access = e.allow(c.principal, WORKSPACE, Action.WRITE)

        async def work(operation_id: str) -> ReconcileResult:
            outcome, inspection = await reconcile_branch(
                realizer, access, c.workspace_id, c.mode, c.reason, operation_id
            )
            rescue = None
            if outcome.rescue is not None:
                refs = await e.runtime.store(
                    lambda: list(app.workspaces[c.workspace_id].rescue_refs)
                )
                rescue = rescue_view(next(r for r in refs if r["ref"] == outcome.rescue.ref))
            return ReconcileResult(
                workspace=await view(c.workspace_id),
                inspection=msgspec.convert(inspection, BranchInspection),
                rescue_ref=rescue,
            )

        return await long(
            access, c.principal, "reconcile_branch", c.workspace_id, ctx, work, seen(c.workspace_id)
        )

    async def update(
        c: UpdateExecutionWorkspace, ctx: RequestContext
    ) -> ExecutionWorkspace | Accepted:
        access = e.allow(c.principal, WORKSPACE, Action.WRITE)
        patch = changes(c, _PATCH)
        if "config" in patch:
            patch["config"] = builtins(patch["config"])
        current = await e.run(access, lambda a: app.workspace_of(a, c.workspace_id).status)
        closed = current in ("archived", "cleanup_failed")
        if c.status not in (msgspec.UNSET, "archived") and not (c.status == "active" and closed):
            patch["status"] = c.status
        if patch:
            await e.run(
                access,
                lambda a: app.update_workspace(a, c.workspace_id, patch),
                cause_of(c.principal, "update workspace"),
            )
        # The workspace was looked up above: archive and reopen need no second look.
        if c.status == "archived":
            return await archive_as(access, c.principal, c.workspace_id, None, ctx, None)
        if c.status == "active" and closed:
            return await reopen_as(access, c.principal, c.workspace_id, None, ctx, None)
        return await view(c.workspace_id)

    async def get(q: GetExecutionWorkspace, ctx: RequestContext) -> ExecutionWorkspace:
        facts = await e.read(q.principal, WORKSPACE, lambda a: gather(app, a, q.workspace_id))
        delivery = await inspect(realizer, facts)
        return await e.runtime.store(
            lambda: workspace_view(app, app.workspaces[q.workspace_id], delivery)
        )

    async def readiness(q: GetCloseReadiness, ctx: RequestContext) -> CloseReadiness:
        facts = await e.read(q.principal, WORKSPACE, lambda a: gather(app, a, q.workspace_id))
        verdict, delivery, _ = await assess(realizer, facts)
        return readiness_view(facts, verdict, delivery)

    def listing(a: Access, company_id: str, f: WorkspaceFilters, limit: int, offset: int) -> Any:
        return app.list_workspaces(
            a,
            company_id,
            project_id=f.project_id,
            project_workspace_id=f.project_workspace_id,
            issue_id=f.issue_id,
            statuses=f.statuses,
            reuse_eligible=f.reuse_eligible,
            limit=limit,
            offset=offset,
        )

    async def list_(q: ListExecutionWorkspaces, ctx: RequestContext) -> Page[ExecutionWorkspaceRow]:
        def page(a: Access) -> Page[ExecutionWorkspaceRow]:
            rows, total = listing(a, q.company_id, q.filters, q.limit, q.offset)
            return Page(items=[workspace_row(app, w) for w in rows], total=total)

        return await e.read(q.principal, WORKSPACE, page)

    async def summaries(
        q: ListExecutionWorkspaceSummaries, ctx: RequestContext
    ) -> Page[ExecutionWorkspaceSummary]:
        def page(a: Access) -> Page[ExecutionWorkspaceSummary]:
            rows, total = listing(a, q.company_id, q.filters, q.limit, q.offset)
            return Page(items=[summary_view(w) for w in rows], total=total)

        return await e.read(q.principal, WORKSPACE, page)

    await e.add("workspace_realize", subjects.realize_workspace(e.node), realize_, RealizeWorkspace)
    await e.add(
        "workspace_update",
        subjects.update_execution_workspace(e.node),
        update,
        UpdateExecutionWorkspace,
    )
    await e.add("workspace_archive", subjects.archive_workspace(e.node), archive_, ArchiveWorkspace)
    await e.add("workspace_reopen", subjects.reopen_workspace(e.node), reopen_, ReopenWorkspace)
    await e.add(
        "workspace_reconcile_branch", subjects.reconcile_branch(e.node), reconcile, ReconcileBranch
    )
    await e.add("workspace_get", subjects.WORKSPACE_GET, get, GetExecutionWorkspace)
    await e.add("workspace_list", subjects.WORKSPACE_LIST, list_, ListExecutionWorkspaces)
    await e.add(
        "workspace_list_summaries",
        subjects.WORKSPACE_LIST_SUMMARIES,
        summaries,
        ListExecutionWorkspaceSummaries,
    )
    await e.add(
        "workspace_close_readiness",
        subjects.WORKSPACE_CLOSE_READINESS,
        readiness,
        GetCloseReadiness,
    )
