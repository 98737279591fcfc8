"""The query of a workspace's runtime audit trail: the supervisor's stored events of its
target, as rows with the contract the realizer serves (the gateway merges both)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contracts.workspace_views import Page
from runtime_supervisor.publishing import to_contract
from servicekit.workspace_audit import audit_row, event_page

if TYPE_CHECKING:
    from contracts.execution_commands import GetWorkspaceEvents
    from contracts.execution_views import WorkspaceEventRow
    from runtime_supervisor.application import RuntimeSupervisorApplication
    from servicekit.access import Access

__all__ = ["event_row", "workspace_events"]


def event_row(domain_event: Any) -> WorkspaceEventRow:
    """One stored event of the supervisor as a row of a workspace's audit trail."""
    return audit_row(domain_event, to_contract, "supervisor")


def workspace_events(
    app: RuntimeSupervisorApplication, access: Access, q: GetWorkspaceEvents
) -> Page[WorkspaceEventRow]:
    """On the store's thread: the page ``q`` asks for of the trail of its workspace, oldest
    first, of the types it asks for; empty when the principal does not own it (the realizer's
    refusal is the answer)."""
    target = app.target(access.scope(), workspace_id=q.workspace_id)
    if not app.owns_target(access, target):
        return Page(items=[], total=0)
    rows = [event_row(ev) for ident in app.event_sources(target) for ev in app.events.get(ident)]
    rows.sort(key=lambda r: (r.occurred_at, r.aggregate_id, r.aggregate_version))
    return event_page(rows, q.types, q.offset, q.limit)
