"""Endpoints of workspace operations (rows, detail, output byte ranges), the workspace's audit
trail and its history (ARCHITECTURE §2: service-wide queries, merged by the gateway).

All are reads of the execution workspace (``Resource.EXECUTION_WORKSPACE``): an agent key or run
token reads them only for a workspace it reaches (ARCHITECTURE §5.1), 403 otherwise."""

from __future__ import annotations

import asyncio
from datetime import UTC
from typing import TYPE_CHECKING, Any
from uuid import UUID

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
from contracts.workspace_views import Page
from servicekit.access import Resource
from servicekit.workspace_audit import audit_row
from workspace_realizer.domain.errors import InvalidInputError, NotFoundError
from workspace_realizer.publishing import to_contract
from workspace_realizer.steps import read_output
from workspace_realizer.views import operation_detail, operation_row, workspace_row

if TYPE_CHECKING:
    from contracts.execution_views import WorkspaceOperation, WorkspaceOperationDetail
    from natsbus import RequestContext
    from servicekit.access import Access
    from workspace_realizer.endpoints.common import Endpoints

__all__ = ["MAX_OUTPUT_RANGE", "register_audit"]

MAX_OUTPUT_RANGE = 256 * 1024
WORKSPACE = Resource.EXECUTION_WORKSPACE


def event_row(domain_event: Any) -> WorkspaceEventRow:
    """One stored event of the realizer as a row of a workspace's audit trail."""
    return audit_row(domain_event, to_contract, "realizer")


async def register_audit(e: Endpoints) -> None:
    """Add the operation, audit and history queries (``ws.qry.realizer.*``)."""
    app, home = e.app, e.realizer.home

    async def operations(
        q: ListWorkspaceOperations, ctx: RequestContext
    ) -> Page[WorkspaceOperation]:
        def page(a: Access) -> Page[WorkspaceOperation]:
            rows, total = app.list_operations(a, q.workspace_id, q.limit, q.offset)
            return Page(items=[operation_row(o) for o in rows], total=total)

        return await e.read(q.principal, WORKSPACE, page)

    async def operation(q: GetWorkspaceOperation, ctx: RequestContext) -> WorkspaceOperationDetail:
        return await e.read(
            q.principal, WORKSPACE, lambda a: operation_detail(app.operation_of(a, q.operation_id))
        )

    async def output(
        q: GetWorkspaceOperationOutput, ctx: RequestContext
    ) -> WorkspaceOperationOutput:
        if q.offset < 0 or not 0 < q.length <= MAX_OUTPUT_RANGE:
            raise InvalidInputError(
                f"offset must be 0 or more and length 1-{MAX_OUTPUT_RANGE}.", field="length"
            )
        await e.read(q.principal, WORKSPACE, lambda a: app.operation_of(a, q.operation_id))
        data, total = await asyncio.to_thread(
            read_output, home, q.operation_id, q.stream, q.offset, q.length
        )
        return WorkspaceOperationOutput(data=data, offset=q.offset, total_bytes=total)

    async def events(q: GetWorkspaceEvents, ctx: RequestContext) -> Page[WorkspaceEventRow]:
        def page(a: Access) -> Page[WorkspaceEventRow]:
            workspace = app.workspace_of(a, q.workspace_id)
            stored = app.events.get(UUID(q.workspace_id), gt=q.offset, limit=q.limit)
            return Page(items=[event_row(ev) for ev in stored], total=workspace.version)

        return await e.read(q.principal, WORKSPACE, page)

    async def history(q: GetWorkspaceHistory, ctx: RequestContext) -> WorkspaceHistory:
        def at_version(a: Access) -> WorkspaceHistory:
            app.workspace_of(a, q.workspace_id)
            version = q.version
            if (version is None) == (q.at is None):
                raise InvalidInputError("Give exactly one of version and at.", field="version")
            if q.at is not None:
                at = q.at if q.at.tzinfo is not None else q.at.replace(tzinfo=UTC)
                stored = app.events.get(UUID(q.workspace_id))
                found = [ev for ev in stored if getattr(ev, "timestamp", at) <= at]
                version = found[-1].originator_version if found else None
            if version is None or version < 1:
                raise NotFoundError(
                    "The workspace did not exist yet then.", workspaceId=q.workspace_id
                )
            then: Any = app.repository.get(UUID(q.workspace_id), version=version)
            return WorkspaceHistory(
                version=then.version,
                occurred_at=then.modified_on,
                workspace=workspace_row(app, then),
            )

        return await e.read(q.principal, WORKSPACE, at_version)

    await e.add(
        "workspace_operations",
        subjects.workspace_operations("realizer"),
        operations,
        ListWorkspaceOperations,
    )
    await e.add(
        "workspace_operation",
        subjects.workspace_operation("realizer"),
        operation,
        GetWorkspaceOperation,
    )
    await e.add(
        "workspace_operation_output",
        subjects.workspace_operation_output("realizer"),
        output,
        GetWorkspaceOperationOutput,
    )
    await e.add(
        "workspace_events", subjects.workspace_events("realizer"), events, GetWorkspaceEvents
    )
    await e.add("workspace_history", subjects.WORKSPACE_HISTORY, history, GetWorkspaceHistory)
