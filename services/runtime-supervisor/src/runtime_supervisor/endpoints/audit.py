"""Endpoints of the supervisor's workspace operations (rows, detail, output byte ranges) and of a
workspace's runtime audit trail, on ``ws.qry.supervisor.*`` with the contracts the realizer
serves on ``ws.qry.realizer.*`` (the gateway merges both). Each is a read of execution workspaces,
asked of the access model once at its entry (ARCHITECTURE §5.1: the admin key is refused, 403).
An agent key or run token reads only its own: one operation of another issue, workspace or run is
refused (403, once the copies had their moment to catch up, ``freshness.owned``); lists and the
audit trail leave out what is not its own."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import contracts.workspace_subjects as subjects
from contracts.execution_commands import (
    GetWorkspaceEvents,
    GetWorkspaceOperation,
    GetWorkspaceOperationOutput,
    ListWorkspaceOperations,
)
from contracts.execution_views import WorkspaceEventRow, WorkspaceOperationOutput
from contracts.subjects import on_node
from contracts.workspace_views import Page
from runtime_supervisor.adapters.outputs import MAX_OUTPUT_RANGE, read_output
from runtime_supervisor.domain import InvalidInputError
from runtime_supervisor.endpoints.common import SupervisorEndpoints
from runtime_supervisor.orchestration.freshness import OWN_WAIT, owned, wait_for
from runtime_supervisor.usecases.audit import workspace_events
from runtime_supervisor.usecases.views import operation_detail
from servicekit.access import Access, Action, Resource
from servicekit.routes import Route

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contracts.base import Accepted, ErrorReply, Ok, Principal
    from contracts.execution_views import WorkspaceOperation, WorkspaceOperationDetail
    from natsbus import RequestContext

__all__ = ["AuditEndpoints"]

T = TypeVar("T")


def _reader(principal: Principal) -> Access:
    """The access of ``principal``, once it may read execution workspaces at all."""
    access = Access.of(principal)
    access.reach(Resource.EXECUTION_WORKSPACE, Action.READ)
    return access


class AuditEndpoints(SupervisorEndpoints):
    """The workspace operation and workspace event queries (``ws.qry.supervisor.*``)."""

    def routes(self) -> Sequence[Route]:
        return (
            Route(
                "workspace_operations",
                subjects.workspace_operations("supervisor"),
                self.operations,
                ListWorkspaceOperations,
            ),
            Route(
                "workspace_operation",
                subjects.workspace_operation("supervisor"),
                self.operation,
                GetWorkspaceOperation,
            ),
            Route(
                "workspace_operation_output",
                subjects.workspace_operation_output("supervisor"),
                self.output,
                GetWorkspaceOperationOutput,
            ),
            Route(
                "workspace_operation_output_here",
                self._output_on(self.node),
                self.output,
                GetWorkspaceOperationOutput,
            ),
            Route(
                "workspace_events",
                subjects.workspace_events("supervisor"),
                self.events,
                GetWorkspaceEvents,
            ),
        )

    async def _readable(
        self, access: Access, ctx: RequestContext, view: Callable[[Access], T]
    ) -> T:
        """``view(access)`` on the store's thread; for an agent, a refusal of a thing not its
        own (``Queries.operation_of``) is asked again while the copies catch up
        (``freshness.owned``)."""
        access.scope()  # a key of no company: 403 at once
        if not access.is_agent:  # a record another node's supervisor made a moment ago
            found: T = await self.runtime.store_fresh(view, access)
            return found
        return await owned(self.sup, lambda: view(access), wait=wait_for(ctx, OWN_WAIT))

    async def operations(
        self, q: ListWorkspaceOperations, ctx: RequestContext
    ) -> Page[WorkspaceOperation]:
        access = _reader(q.principal)
        scope = access.scope()
        found: Page[WorkspaceOperation] = await self.sup.store(
            lambda: self.app.list_operations(
                scope, workspace_id=q.workspace_id, limit=q.limit, offset=q.offset, access=access
            )
        )
        return found

    async def operation(
        self, q: GetWorkspaceOperation, ctx: RequestContext
    ) -> WorkspaceOperationDetail:
        access = _reader(q.principal)
        return await self._readable(
            access, ctx, lambda a: operation_detail(self.app.operation_of(a, q.operation_id))
        )

    @staticmethod
    def _output_on(node: str) -> str:
        return on_node(subjects.workspace_operation_output("supervisor"), node)

    async def output(
        self, q: GetWorkspaceOperationOutput, ctx: RequestContext
    ) -> WorkspaceOperationOutput | Ok | Accepted | ErrorReply:
        access = _reader(q.principal)
        if q.offset < 0 or not 0 < q.length <= MAX_OUTPUT_RANGE:
            raise InvalidInputError(
                f"offset must be 0 or more and length 1-{MAX_OUTPUT_RANGE}.", field="length"
            )
        node = await self._readable(
            access, ctx, lambda a: self.app.operation_of(a, q.operation_id).node_id
        )
        what = f"operation {q.operation_id}"
        moved = await self.on_its_node(node, self._output_on, q, ctx, what)
        if moved is not None:  # its output files are on the node it ran on
            return moved
        data, total = await asyncio.to_thread(
            read_output, self.sup.settings.home, q.operation_id, q.stream, q.offset, q.length
        )
        return WorkspaceOperationOutput(data=data, offset=q.offset, total_bytes=total)

    async def events(self, q: GetWorkspaceEvents, ctx: RequestContext) -> Page[WorkspaceEventRow]:
        found: Page[WorkspaceEventRow] = await self.sup.store(
            lambda: workspace_events(self.app, _reader(q.principal), q)
        )
        return found
