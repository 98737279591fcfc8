"""Endpoints of execution workspaces: realize, change (archive and reopen included), reads.

Realize, archive and reopen run through the service's operation runner: they answer with their
result when they end before the request's deadline, else ``accepted {operationId}``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, TypeVar

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
)
from contracts.execution_views import BranchInspection, RealizeResult, ReconcileResult
from contracts.workspace_views import Page
from servicekit.access import Access, Action, Resource
from servicekit.routes import Route
from workspace_realizer.domain.host.lifecycle import status_request
from workspace_realizer.endpoints.common import Endpoints, builtins, cause_of
from workspace_realizer.orchestration.archive import archive
from workspace_realizer.orchestration.facts import assess, gather, inspect
from workspace_realizer.orchestration.realize import RealizeRequest, realize, refuse_unisolated
from workspace_realizer.orchestration.reconcile import reconcile_branch
from workspace_realizer.orchestration.reopen import reopen
from workspace_realizer.usecases.host.views import (
    readiness_view,
    rescue_view,
    summary_view,
    workspace_row,
    workspace_view,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contracts.base import Accepted, Principal
    from contracts.execution_views import (
        CloseReadiness,
        ExecutionWorkspace,
        ExecutionWorkspaceRow,
        ExecutionWorkspaceSummary,
    )
    from natsbus import RequestContext
    from servicekit import ServiceRuntime
    from workspace_realizer.domain.host.records import WorkspaceChanges
    from workspace_realizer.orchestration.context import Realizer

__all__ = ["WorkspaceEndpoints"]


def workspace_changes(c: UpdateExecutionWorkspace) -> WorkspaceChanges:
    """The fields an update sets (the config patch as stored: a cleared key is ``None``), but
    its ``status``, which :func:`status_request` reads."""
    patch: WorkspaceChanges = {}
    if c.name is not msgspec.UNSET:
        patch["name"] = c.name
    if c.config is not msgspec.UNSET:
        patch["config"] = builtins(c.config)
    if c.cleanup_eligible_at is not msgspec.UNSET:
        patch["cleanup_eligible_at"] = c.cleanup_eligible_at
    return patch


T = TypeVar("T")

WORKSPACE = Resource.EXECUTION_WORKSPACE


class WorkspaceEndpoints(Endpoints):
    """Realize, change (archive, reopen and branch reconcile included), read and list execution
    workspaces. Changing a workspace is the board's: the table gives agents no write of
    execution workspaces, so ``allow`` refuses them first."""

    def __init__(self, runtime: ServiceRuntime, realizer: Realizer) -> None:
        super().__init__(runtime)
        self.realizer = realizer

    def routes(self) -> Sequence[Route]:
        """The execution-workspace endpoints (the changes carry the node: they run git)."""
        node = self.node
        return (
            Route(
                "workspace_realize",
                subjects.realize_workspace(node),
                self.realize,
                RealizeWorkspace,
            ),
            Route(
                "workspace_update",
                subjects.update_execution_workspace(node),
                self.update,
                UpdateExecutionWorkspace,
            ),
            Route(
                "workspace_archive",
                subjects.archive_workspace(node),
                self.archive,
                ArchiveWorkspace,
            ),
            Route(
                "workspace_reopen", subjects.reopen_workspace(node), self.reopen, ReopenWorkspace
            ),
            Route(
                "workspace_reconcile_branch",
                subjects.reconcile_branch(node),
                self.reconcile_branch,
                ReconcileBranch,
            ),
            Route("workspace_get", subjects.WORKSPACE_GET, self.get, GetExecutionWorkspace),
            Route("workspace_list", subjects.WORKSPACE_LIST, self.list, ListExecutionWorkspaces),
            Route(
                "workspace_list_summaries",
                subjects.WORKSPACE_LIST_SUMMARIES,
                self.list_summaries,
                ListExecutionWorkspaceSummaries,
            ),
            Route(
                "workspace_close_readiness",
                subjects.WORKSPACE_CLOSE_READINESS,
                self.close_readiness,
                GetCloseReadiness,
            ),
        )

    # -- commands ----------------------------------------------------------------------------

    async def realize(self, c: RealizeWorkspace, ctx: RequestContext) -> RealizeResult | Accepted:
        """``ws.cmd.workspace.realize.<node>``: a long operation."""
        access = self.allow(c.principal, Resource.ISSUE, Action.CONTROL)
        request = RealizeRequest(
            c.issue_id, c.mode, c.execution_workspace_id, c.agent_id, c.require_isolation
        )
        return await self.long(
            access,
            c.principal,
            "realize",
            c.issue_id,
            ctx,
            partial(self._realize, access, request),
            lambda a: refuse_unisolated(self.app, a, request),
        )

    async def archive(
        self, c: ArchiveWorkspace, ctx: RequestContext
    ) -> ExecutionWorkspace | Accepted:
        """``ws.cmd.workspace.archive.<node>``: the archive saga, a long operation."""
        access = self.allow(c.principal, WORKSPACE, Action.WRITE)
        return await self._archive_as(
            access,
            c.principal,
            c.workspace_id,
            c.expected_generation,
            ctx,
            self._seen(c.workspace_id),
        )

    async def reopen(
        self, c: ReopenWorkspace, ctx: RequestContext
    ) -> ExecutionWorkspace | Accepted:
        """``ws.cmd.workspace.reopen.<node>``: a long operation."""
        access = self.allow(c.principal, WORKSPACE, Action.WRITE)
        return await self._reopen_as(
            access,
            c.principal,
            c.workspace_id,
            c.expected_generation,
            ctx,
            self._seen(c.workspace_id),
        )

    async def reconcile_branch(
        self, c: ReconcileBranch, ctx: RequestContext
    ) -> ReconcileResult | Accepted:
        """``ws.cmd.workspace.reconcile_branch.<node>``: a long operation."""
        access = self.allow(c.principal, WORKSPACE, Action.WRITE)
        return await self.long(
            access,
            c.principal,
            "reconcile_branch",
            c.workspace_id,
            ctx,
            partial(self._reconcile, access, c),
            self._seen(c.workspace_id),
        )

    async def update(
        self, c: UpdateExecutionWorkspace, ctx: RequestContext
    ) -> ExecutionWorkspace | Accepted:
        """``ws.cmd.workspace.update.<node>``: an update to ``archived`` archives, one of a
        closed workspace to ``active`` reopens (:func:`status_request`)."""
        access = self.allow(c.principal, WORKSPACE, Action.WRITE)
        patch = workspace_changes(c)
        current = await self.run(access, lambda a: self.app.workspace_of(a, c.workspace_id).status)
        asked = status_request(current, None if c.status is msgspec.UNSET else c.status)
        if asked.status is not None:
            patch["status"] = asked.status
        if patch:
            await self.run(
                access,
                lambda a: self.app.update_workspace(a, c.workspace_id, patch),
                cause_of(c.principal, "update workspace"),
            )
        # The workspace was looked up above: archive and reopen need no second look.
        if asked.then == "archive":
            return await self._archive_as(access, c.principal, c.workspace_id, None, ctx, None)
        if asked.then == "reopen":
            return await self._reopen_as(access, c.principal, c.workspace_id, None, ctx, None)
        return await self._view(c.workspace_id)

    # -- reads -------------------------------------------------------------------------------

    async def get(self, q: GetExecutionWorkspace, ctx: RequestContext) -> ExecutionWorkspace:
        """``ws.qry.workspace.get``: the detail, with delivery state (runs git)."""
        app = self.app
        facts = await self.read(q.principal, WORKSPACE, lambda a: gather(app, a, q.workspace_id))
        delivery = await inspect(self.realizer, facts)
        return await self.runtime.store(
            lambda: workspace_view(app, app.workspaces[q.workspace_id], delivery)
        )

    async def close_readiness(self, q: GetCloseReadiness, ctx: RequestContext) -> CloseReadiness:
        """``ws.qry.workspace.close_readiness`` (runs git)."""
        app = self.app
        facts = await self.read(q.principal, WORKSPACE, lambda a: gather(app, a, q.workspace_id))
        verdict, delivery, _ = await assess(self.realizer, facts)
        return readiness_view(facts, verdict, delivery)

    async def list(
        self, q: ListExecutionWorkspaces, ctx: RequestContext
    ) -> Page[ExecutionWorkspaceRow]:
        """``ws.qry.workspace.list``: rows, no git."""

        def page(a: Access) -> Page[ExecutionWorkspaceRow]:
            rows, total = self.app.list_filtered(a, q.company_id, q.filters, q.limit, q.offset)
            return Page(items=[workspace_row(self.app, w) for w in rows], total=total)

        return await self.read(q.principal, WORKSPACE, page)

    async def list_summaries(
        self, q: ListExecutionWorkspaceSummaries, ctx: RequestContext
    ) -> Page[ExecutionWorkspaceSummary]:
        """``ws.qry.workspace.list_summaries``: summaries, no git."""

        def page(a: Access) -> Page[ExecutionWorkspaceSummary]:
            rows, total = self.app.list_filtered(a, q.company_id, q.filters, q.limit, q.offset)
            return Page(items=[summary_view(w) for w in rows], total=total)

        return await self.read(q.principal, WORKSPACE, page)

    # -- helpers -----------------------------------------------------------------------------

    async def _view(self, workspace_id: str) -> ExecutionWorkspace:
        app = self.app
        return await self.runtime.store(lambda: workspace_view(app, app.workspaces[workspace_id]))

    def _seen(self, workspace_id: str) -> Callable[[Access], object]:
        return lambda a: self.app.workspace_of(a, workspace_id)

    async def _archive_as(
        self,
        access: Access,
        principal: Principal,
        workspace_id: str,
        expected: int | None,
        ctx: RequestContext,
        visible: Callable[[Access], object] | None,
    ) -> ExecutionWorkspace | Accepted:
        work = partial(self._archive, access, workspace_id, expected)
        return await self.long(access, principal, "archive", workspace_id, ctx, work, visible)

    async def _reopen_as(
        self,
        access: Access,
        principal: Principal,
        workspace_id: str,
        expected: int | None,
        ctx: RequestContext,
        visible: Callable[[Access], object] | None,
    ) -> ExecutionWorkspace | Accepted:
        work = partial(self._reopen, access, workspace_id, expected)
        return await self.long(access, principal, "reopen", workspace_id, ctx, work, visible)

    # -- the long operations' work -------------------------------------------------------------

    async def _realize(
        self, access: Access, request: RealizeRequest, operation_id: str
    ) -> RealizeResult:
        done = await realize(self.realizer, access, request, operation_id)
        workspace = await self._view(done.workspace_id)
        return RealizeResult(workspace=workspace, created=done.created, warnings=done.warnings)

    async def _archive(
        self, access: Access, workspace_id: str, expected: int | None, operation_id: str
    ) -> ExecutionWorkspace:
        await archive(
            self.realizer,
            access,
            workspace_id,
            expected_generation=expected,
            operation_id=operation_id,
        )
        return await self._view(workspace_id)

    async def _reopen(
        self, access: Access, workspace_id: str, expected: int | None, operation_id: str
    ) -> ExecutionWorkspace:
        await reopen(
            self.realizer,
            access,
            workspace_id,
            expected_generation=expected,
            operation_id=operation_id,
        )
        return await self._view(workspace_id)

    async def _reconcile(
        self, access: Access, c: ReconcileBranch, operation_id: str
    ) -> ReconcileResult:
        outcome, inspection = await reconcile_branch(
            self.realizer, access, c.workspace_id, c.mode, c.reason, operation_id
        )
        rescue = None
        if outcome.rescue is not None:
            refs = await self.runtime.store(
                lambda: list(self.app.workspaces[c.workspace_id].rescue_refs)
            )
            rescue = rescue_view(next(r for r in refs if r["ref"] == outcome.rescue.ref))
        return ReconcileResult(
            workspace=await self._view(c.workspace_id),
            inspection=msgspec.convert(inspection, BranchInspection),
            rescue_ref=rescue,
        )
