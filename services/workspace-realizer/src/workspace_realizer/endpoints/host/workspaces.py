"""Endpoints that change execution workspaces: realize, change (archive and reopen included),
branch reconcile; reads are :mod:`workspace_realizer.endpoints.host.workspace_reads`.

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
    RealizeWorkspace,
    ReconcileBranch,
    ReopenWorkspace,
    UpdateExecutionWorkspace,
)
from contracts.execution_views import BranchInspection, RealizeResult, ReconcileResult
from servicekit.access import Access, Action, Resource
from servicekit.routes import Route
from workspace_realizer.domain.host.lifecycle import status_request
from workspace_realizer.endpoints.common import Endpoints, builtins, cause_of
from workspace_realizer.orchestration.archive import archive
from workspace_realizer.orchestration.realize import RealizeRequest, realize, refuse_unisolated
from workspace_realizer.orchestration.reconcile import reconcile_branch
from workspace_realizer.orchestration.reopen import reopen
from workspace_realizer.usecases.host.planning import realize_node
from workspace_realizer.usecases.host.views import (
    rescue_view,
    workspace_view,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contracts.base import Accepted, ErrorReply, Ok, Principal
    from contracts.execution_views import (
        ExecutionWorkspace,
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
    """Realize and change execution workspaces (archive, reopen and branch reconcile included),
    on the node that holds each (sent on there from any other). Changing a workspace is the
    board's: the table gives agents no write of execution workspaces, so ``allow`` refuses them
    first. Reads are :mod:`workspace_realizer.endpoints.host.workspace_reads`."""

    def __init__(self, runtime: ServiceRuntime, realizer: Realizer) -> None:
        super().__init__(runtime)
        self.realizer = realizer

    def routes(self) -> Sequence[Route]:
        """The execution-workspace commands (they carry the node: they run git)."""
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
        )

    # -- commands ----------------------------------------------------------------------------

    async def realize(
        self, c: RealizeWorkspace, ctx: RequestContext
    ) -> RealizeResult | Accepted | Ok | ErrorReply:
        """``ws.cmd.workspace.realize.<node>``: a long operation, on the node of the workspace
        it reuses or of the project workspace it branches from (sent on there from any other)."""
        access = self.allow(c.principal, Resource.ISSUE, Action.CONTROL)
        moved = await self.elsewhere(
            lambda: realize_node(self.app, access, c.issue_id, c.mode, c.execution_workspace_id),
            subjects.realize_workspace,
            c,
            ctx,
            f"the execution workspace of issue {c.issue_id}",
        )
        if moved is not None:
            return moved
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
    ) -> ExecutionWorkspace | Accepted | Ok | ErrorReply:
        """``ws.cmd.workspace.archive.<node>``: the archive saga, a long operation."""
        access = self.allow(c.principal, WORKSPACE, Action.WRITE)
        moved = await self.on_workspace_node(
            access, c.workspace_id, subjects.archive_workspace, c, ctx
        )
        if moved is not None:
            return moved
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
    ) -> ExecutionWorkspace | Accepted | Ok | ErrorReply:
        """``ws.cmd.workspace.reopen.<node>``: a long operation."""
        access = self.allow(c.principal, WORKSPACE, Action.WRITE)
        moved = await self.on_workspace_node(
            access, c.workspace_id, subjects.reopen_workspace, c, ctx
        )
        if moved is not None:
            return moved
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
    ) -> ReconcileResult | Accepted | Ok | ErrorReply:
        """``ws.cmd.workspace.reconcile_branch.<node>``: a long operation."""
        access = self.allow(c.principal, WORKSPACE, Action.WRITE)
        moved = await self.on_workspace_node(
            access, c.workspace_id, subjects.reconcile_branch, c, ctx
        )
        if moved is not None:
            return moved
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
    ) -> ExecutionWorkspace | Accepted | Ok | ErrorReply:
        """``ws.cmd.workspace.update.<node>``: an update to ``archived`` archives, one of a
        closed workspace to ``active`` reopens (:func:`status_request`)."""
        access = self.allow(c.principal, WORKSPACE, Action.WRITE)
        moved = await self.on_workspace_node(
            access, c.workspace_id, subjects.update_execution_workspace, c, ctx
        )
        if moved is not None:
            return moved
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
