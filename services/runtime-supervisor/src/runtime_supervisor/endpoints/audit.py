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
from typing import TYPE_CHECKING, Any, TypeVar

import contracts.workspace_subjects as subjects
from contracts.execution_commands import (
    GetWorkspaceEvents,
    GetWorkspaceOperation,
    GetWorkspaceOperationOutput,
    ListWorkspaceOperations,
)
from contracts.execution_views import WorkspaceEventRow, WorkspaceOperationOutput
from contracts.workspace_views import Page
from runtime_supervisor.domain import InvalidInputError
from runtime_supervisor.freshness import OWN_WAIT, owned, wait_for
from runtime_supervisor.outputs import MAX_OUTPUT_RANGE, read_output
from runtime_supervisor.publishing import to_contract
from runtime_supervisor.views import operation_detail
from servicekit.access import Access, Action, Resource
from servicekit.workspace_audit import audit_row

if TYPE_CHECKING:
    from contracts.base import Principal
    from contracts.execution_views import WorkspaceOperation, WorkspaceOperationDetail
    from natsbus import RequestContext
    from runtime_supervisor.endpoints.common import Endpoints

__all__ = ["event_row", "register_audit"]

T = TypeVar("T")


def event_row(domain_event: Any) -> WorkspaceEventRow:
    """One stored event of the supervisor as a row of a workspace's audit trail."""
    return audit_row(domain_event, to_contract, "supervisor")


async def register_audit(e: Endpoints) -> None:
    """Add the workspace operation and workspace event queries (``ws.qry.supervisor.*``)."""
    sup, app = e.sup, e.app

    def reader(principal: Principal) -> Access:
        """The access of ``principal``, once it may read execution workspaces at all."""
        access = Access.of(principal)
        access.reach(Resource.EXECUTION_WORKSPACE, Action.READ)
        return access

    async def readable(access: Access, ctx: RequestContext, view: Callable[[Access], T]) -> T:
        """``view(access)`` on the store's thread; for an agent, a refusal of a thing not its
        own (``Queries.operation_of``) is asked again while the copies catch up
        (``freshness.owned``)."""
        access.scope()  # a key of no company: 403 at once
        if not access.is_agent:
            found: T = await sup.store(view, access)
            return found
        return await owned(sup, lambda: view(access), wait=wait_for(ctx, OWN_WAIT))

    async def operations(
        q: ListWorkspaceOperations, ctx: RequestContext
    ) -> Page[WorkspaceOperation]:
        access = reader(q.principal)
        scope = access.scope()
        found: Page[WorkspaceOperation] = await sup.store(
            lambda: app.list_operations(
                scope, workspace_id=q.workspace_id, limit=q.limit, offset=q.offset, access=access
            )
        )
        return found

    async def operation(q: GetWorkspaceOperation, ctx: RequestContext) -> WorkspaceOperationDetail:
        access = reader(q.principal)
        return await readable(
            access, ctx, lambda a: operation_detail(app.operation_of(a, q.operation_id))
        )

    async def output(
        q: GetWorkspaceOperationOutput, ctx: RequestContext
    ) -> WorkspaceOperationOutput:
        access = reader(q.principal)
        if q.offset < 0 or not 0 < q.length <= MAX_OUTPUT_RANGE:
            raise InvalidInputError(
                f"offset must be 0 or more and length 1-{MAX_OUTPUT_RANGE}.", field="length"
            )
        await readable(access, ctx, lambda a: app.operation_of(a, q.operation_id))
        data, total = await asyncio.to_thread(
            read_output, sup.settings.home, q.operation_id, q.stream, q.offset, q.length
        )
        return WorkspaceOperationOutput(data=data, offset=q.offset, total_bytes=total)

    def events_page(q: GetWorkspaceEvents) -> Page[WorkspaceEventRow]:
        access = reader(q.principal)
        target = app.target(access.scope(), workspace_id=q.workspace_id)
        if not app.owns_target(access, target):  # the realizer's refusal is the answer
            return Page(items=[], total=0)
        rows = [
            event_row(ev) for ident in app.event_sources(target) for ev in app.events.get(ident)
        ]
        rows.sort(key=lambda r: (r.occurred_at, r.aggregate_id, r.aggregate_version))
        return Page(items=rows[q.offset : q.offset + q.limit], total=len(rows))

    async def events(q: GetWorkspaceEvents, ctx: RequestContext) -> Page[WorkspaceEventRow]:
        found: Page[WorkspaceEventRow] = await sup.store(events_page, q)
        return found

    await e.add(
        "workspace_operations",
        subjects.workspace_operations("supervisor"),
        operations,
        ListWorkspaceOperations,
    )
    await e.add(
        "workspace_operation",
        subjects.workspace_operation("supervisor"),
        operation,
        GetWorkspaceOperation,
    )
    await e.add(
        "workspace_operation_output",
        subjects.workspace_operation_output("supervisor"),
        output,
        GetWorkspaceOperationOutput,
    )
    await e.add(
        "workspace_events", subjects.workspace_events("supervisor"), events, GetWorkspaceEvents
    )
