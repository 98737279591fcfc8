"""Endpoints that read execution workspaces: the detail, close readiness and diff (they run git, on
the workspace's node: a request for another node's workspace is sent on there, and the detail
answers as recorded, ``nodeState`` ``unreachable``, when that node does not answer), and the
lists (store reads, any host part)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import msgspec

import contracts.workspace_subjects as subjects
from contracts.execution_commands import (
    GetCloseReadiness,
    GetExecutionWorkspace,
    ListExecutionWorkspaces,
    ListExecutionWorkspaceSummaries,
)
from contracts.subjects import on_node
from contracts.workspace_diff import GetWorkspaceDiff, WorkspaceDiff
from contracts.workspace_views import Page
from servicekit.access import Action, Resource
from servicekit.node_routing import NodeUnreachableError
from servicekit.routes import Route
from workspace_realizer.endpoints.common import Endpoints
from workspace_realizer.orchestration.diff import workspace_diff
from workspace_realizer.orchestration.facts import assess, gather, inspect
from workspace_realizer.usecases.host.views import (
    readiness_view,
    summary_view,
    workspace_row,
    workspace_view,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contracts.base import Accepted, ErrorReply, Ok
    from contracts.execution_views import (
        CloseReadiness,
        ExecutionWorkspace,
        ExecutionWorkspaceRow,
        ExecutionWorkspaceSummary,
    )
    from natsbus import RequestContext
    from servicekit import ServiceRuntime
    from servicekit.access import Access
    from workspace_realizer.orchestration.context import Realizer

__all__ = ["WorkspaceReadEndpoints"]

WORKSPACE = Resource.EXECUTION_WORKSPACE


def _here(query_subject: str) -> Callable[[str], str]:
    return partial(on_node, query_subject)


class WorkspaceReadEndpoints(Endpoints):
    """Read and list execution workspaces."""

    def __init__(self, runtime: ServiceRuntime, realizer: Realizer) -> None:
        super().__init__(runtime)
        self.realizer = realizer

    def routes(self) -> Sequence[Route]:
        """The reads, with this node's own subjects for those that run git."""
        node = self.node
        return (
            Route("workspace_get", subjects.WORKSPACE_GET, self.get, GetExecutionWorkspace),
            Route(
                "workspace_get_here",
                on_node(subjects.WORKSPACE_GET, node),
                self.get,
                GetExecutionWorkspace,
            ),
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
            Route(
                "workspace_close_readiness_here",
                on_node(subjects.WORKSPACE_CLOSE_READINESS, node),
                self.close_readiness,
                GetCloseReadiness,
            ),
            Route("workspace_diff", subjects.WORKSPACE_DIFF, self.diff, GetWorkspaceDiff),
            Route(
                "workspace_diff_here",
                on_node(subjects.WORKSPACE_DIFF, node),
                self.diff,
                GetWorkspaceDiff,
            ),
        )

    async def get(
        self, q: GetExecutionWorkspace, ctx: RequestContext
    ) -> ExecutionWorkspace | Ok | Accepted | ErrorReply:
        """``ws.qry.workspace.get``: the detail, with delivery state (runs git on its node); as
        recorded, ``nodeState`` ``unreachable``, when its node does not answer; as recorded
        when the query asks for no delivery state."""
        access = self.allow(q.principal, WORKSPACE, Action.READ)
        app = self.app
        if not q.delivery:  # the record only: any realizer has it, once it follows the store
            await self.runtime.follow()  # a change saved a moment ago by another replica
            return await self.read(
                q.principal,
                WORKSPACE,
                lambda a: workspace_view(app, app.workspace_of(a, q.workspace_id)),
            )
        try:
            moved = await self.on_workspace_node(
                access, q.workspace_id, _here(subjects.WORKSPACE_GET), q, ctx
            )
        except NodeUnreachableError:
            recorded = await self.read(
                q.principal,
                WORKSPACE,
                lambda a: workspace_view(app, app.workspace_of(a, q.workspace_id)),
            )
            return msgspec.structs.replace(recorded, node_state="unreachable")
        if moved is not None:
            return moved
        facts = await self.read(q.principal, WORKSPACE, lambda a: gather(app, a, q.workspace_id))
        delivery = await inspect(self.realizer, facts)
        return await self.runtime.store(
            lambda: workspace_view(app, app.workspaces[q.workspace_id], delivery)
        )

    async def close_readiness(
        self, q: GetCloseReadiness, ctx: RequestContext
    ) -> CloseReadiness | Ok | Accepted | ErrorReply:
        """``ws.qry.workspace.close_readiness`` (runs git on its node)."""
        access = self.allow(q.principal, WORKSPACE, Action.READ)
        subject_of = _here(subjects.WORKSPACE_CLOSE_READINESS)
        moved = await self.on_workspace_node(access, q.workspace_id, subject_of, q, ctx)
        if moved is not None:
            return moved
        app = self.app
        facts = await self.read(q.principal, WORKSPACE, lambda a: gather(app, a, q.workspace_id))
        verdict, delivery, _ = await assess(self.realizer, facts)
        return readiness_view(facts, verdict, delivery)

    async def diff(
        self, q: GetWorkspaceDiff, ctx: RequestContext
    ) -> WorkspaceDiff | Ok | Accepted | ErrorReply:
        """``ws.qry.workspace.diff``: what the workspace changed against its base (runs git on
        its node)."""
        access = self.allow(q.principal, WORKSPACE, Action.READ)
        subject_of = _here(subjects.WORKSPACE_DIFF)
        moved = await self.on_workspace_node(access, q.workspace_id, subject_of, q, ctx)
        if moved is not None:
            return moved
        app = self.app
        facts = await self.read(q.principal, WORKSPACE, lambda a: gather(app, a, q.workspace_id))
        return await workspace_diff(self.realizer, facts, q.path)

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
