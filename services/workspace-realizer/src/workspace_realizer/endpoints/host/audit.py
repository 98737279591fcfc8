"""Endpoints of workspace operations (rows, detail, output byte ranges), the workspace's audit
trail and its history (ARCHITECTURE §2: service-wide queries, merged by the gateway).

All are reads of the execution workspace (``Resource.EXECUTION_WORKSPACE``): an agent key or run
token reads them only for a workspace it reaches (ARCHITECTURE §5.1), 403 otherwise."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import contracts.workspace_subjects as subjects
from contracts.execution_commands import (
    GetWorkspaceEvents,
    GetWorkspaceHistory,
    GetWorkspaceOperation,
    GetWorkspaceOperationOutput,
    ListWorkspaceOperations,
)
from contracts.execution_views import (
    WorkspaceEventRow,
    WorkspaceHistory,
    WorkspaceOperationOutput,
)
from contracts.subjects import on_node
from contracts.workspace_views import Page
from servicekit.access import Resource
from servicekit.routes import Route
from servicekit.workspace_audit import audit_row, event_page
from workspace_realizer.domain.errors import InvalidInputError
from workspace_realizer.endpoints.common import Endpoints
from workspace_realizer.orchestration.steps import read_output
from workspace_realizer.publishing import to_contract
from workspace_realizer.usecases.host.views import operation_detail, operation_row, workspace_row

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contracts.base import Accepted, ErrorReply, Ok
    from contracts.execution_views import WorkspaceOperation, WorkspaceOperationDetail
    from natsbus import RequestContext
    from servicekit import ServiceRuntime
    from servicekit.access import Access
    from workspace_realizer.application import WorkspaceRealizerApplication

__all__ = ["MAX_OUTPUT_RANGE", "AuditEndpoints", "event_row", "operation_node"]

MAX_OUTPUT_RANGE = 256 * 1024
WORKSPACE = Resource.EXECUTION_WORKSPACE


def event_row(domain_event: Any) -> WorkspaceEventRow:
    """One stored event of the realizer as a row of a workspace's audit trail."""
    return audit_row(domain_event, to_contract, "realizer")


def operation_node(app: WorkspaceRealizerApplication, operation_id: str) -> str | None:
    """The node a workspace operation ran on: its execution workspace's, else its project
    workspace's (None: recorded before worker nodes)."""
    operation = app.operations.get(operation_id)
    if operation is None:
        return None
    if operation.execution_workspace_id:
        found = app.workspaces.get(operation.execution_workspace_id)
        return None if found is None else found.node_id
    project = app.project_workspaces.get(operation.project_workspace_id or "")
    return None if project is None else project.node_id


class AuditEndpoints(Endpoints):
    """The operation, audit and history queries (``ws.qry.realizer.*``)."""

    def __init__(self, runtime: ServiceRuntime) -> None:
        super().__init__(runtime)
        self.home = runtime.settings.home

    def routes(self) -> Sequence[Route]:
        """The workspace-operation, audit-trail and history queries."""
        return (
            Route(
                "workspace_operations",
                subjects.workspace_operations("realizer"),
                self.operations,
                ListWorkspaceOperations,
            ),
            Route(
                "workspace_operation",
                subjects.workspace_operation("realizer"),
                self.operation,
                GetWorkspaceOperation,
            ),
            Route(
                "workspace_operation_output",
                subjects.workspace_operation_output("realizer"),
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
                subjects.workspace_events("realizer"),
                self.events,
                GetWorkspaceEvents,
            ),
            Route(
                "workspace_history", subjects.WORKSPACE_HISTORY, self.history, GetWorkspaceHistory
            ),
        )

    async def operations(
        self, q: ListWorkspaceOperations, ctx: RequestContext
    ) -> Page[WorkspaceOperation]:
        """A workspace's operations, oldest first."""

        def page(a: Access) -> Page[WorkspaceOperation]:
            rows, total = self.app.list_operations(a, q.workspace_id, q.limit, q.offset)
            return Page(items=[operation_row(o) for o in rows], total=total)

        return await self.read(q.principal, WORKSPACE, page)

    async def operation(
        self, q: GetWorkspaceOperation, ctx: RequestContext
    ) -> WorkspaceOperationDetail:
        """One operation with the excerpts of its output."""
        return await self.read(
            q.principal,
            WORKSPACE,
            lambda a: operation_detail(self.app.operation_of(a, q.operation_id)),
        )

    @staticmethod
    def _output_on(node: str) -> str:
        return on_node(subjects.workspace_operation_output("realizer"), node)

    async def output(
        self, q: GetWorkspaceOperationOutput, ctx: RequestContext
    ) -> WorkspaceOperationOutput | Ok | Accepted | ErrorReply:
        """A byte range of an operation's output (at most :data:`MAX_OUTPUT_RANGE`), read on
        the node it ran on (its files are there)."""
        if q.offset < 0 or not 0 < q.length <= MAX_OUTPUT_RANGE:
            raise InvalidInputError(
                f"offset must be 0 or more and length 1-{MAX_OUTPUT_RANGE}.", field="length"
            )
        await self.read(q.principal, WORKSPACE, lambda a: self.app.operation_of(a, q.operation_id))
        moved = await self.elsewhere(
            lambda: operation_node(self.app, q.operation_id),
            self._output_on,
            q,
            ctx,
            f"workspace operation {q.operation_id}",
        )
        if moved is not None:
            return moved
        data, total = await asyncio.to_thread(
            read_output, self.home, q.operation_id, q.stream, q.offset, q.length
        )
        return WorkspaceOperationOutput(data=data, offset=q.offset, total_bytes=total)

    async def events(self, q: GetWorkspaceEvents, ctx: RequestContext) -> Page[WorkspaceEventRow]:
        """The workspace's audit trail: its stored events as rows (of the types ``q.types``
        asks for: every event is read to count them)."""

        def page(a: Access) -> Page[WorkspaceEventRow]:
            if q.types is not None:
                stored, _ = self.app.workspace_events(a, q.workspace_id, 0, None)
                return event_page(map(event_row, stored), q.types, q.offset, q.limit)
            stored, total = self.app.workspace_events(a, q.workspace_id, q.offset, q.limit)
            return Page(items=[event_row(ev) for ev in stored], total=total)

        return await self.read(q.principal, WORKSPACE, page)

    async def history(self, q: GetWorkspaceHistory, ctx: RequestContext) -> WorkspaceHistory:
        """The workspace's row as it stood at version N or at a given time."""

        def at_version(a: Access) -> WorkspaceHistory:
            then: Any = self.app.workspace_at(a, q.workspace_id, q.version, q.at)
            return WorkspaceHistory(
                version=then.version,
                occurred_at=then.modified_on,
                workspace=workspace_row(self.app, then),
            )

        return await self.read(q.principal, WORKSPACE, at_version)
