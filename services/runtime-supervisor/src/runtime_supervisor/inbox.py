"""The supervisor's inboxes: its read-only copies of the realizer's facts (workspaces' runtime
config, cwd, node and status; project workspaces; projects; issues), of the controller's (runs)
and of the gateway's (companies).

Each handler runs on the store's thread inside the inbox (``eventstore.Inbox``) and saves what it
notes with the upstream position, in one transaction. Events this build does not map are left to
the inbox, which records their position. A finished run also releases its leases in that same
save; ``on_run_finished`` then hears which services it held (to stop an ephemeral or
``on_run_finish`` one, or arm an idle timer). It is called on the store's thread and must only
hand the work over (``loop.call_soon_threadsafe``); since it runs after the save, the
orchestration also reconciles unleased services at start, in case the process died in between.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from contracts import execution_events as ee
from contracts import gateway as ge
from contracts import run_events as re_
from contracts import workspace_events as we
from servicekit.handover import HandOver

if TYPE_CHECKING:
    from eventsourcing.persistence import Tracking

    from runtime_supervisor.application import RuntimeSupervisorApplication
    from runtime_supervisor.domain import CopyKind
    from runtime_supervisor.domain.copies import CopyCounter, CopyFields
    from runtime_supervisor.usecases.services import Release

__all__ = [
    "RunFinishedHandOver",
    "RunFinishedHook",
    "apply_controller_event",
    "apply_gateway_event",
    "apply_realizer_event",
    "controller_inbox",
    "gateway_inbox",
    "realizer_inbox",
]

logger = logging.getLogger(__name__)

RunFinishedHook = Callable[[str, "list[Release]"], None]
"""``hook(run_id, releases)``: called on the store's thread after a finished run's leases were
released and saved."""

Note = tuple["CopyKind", "CopyFields", tuple["CopyCounter", ...]]
"""What an upstream event says: the copy's kind, the fields to set, the counters to bump."""


RunFinishedHandOver = HandOver[RunFinishedHook]
"""Who hears of finished runs (the orchestration, once ``register`` made it)."""


def _plain(value: Any) -> Any:
    return None if value is None else msgspec.to_builtins(value)


def _workspace(e: ee.WorkspaceRealized) -> CopyFields:
    return {
        "project_id": e.project_id,
        "project_workspace_id": e.project_workspace_id,
        "source_issue_id": e.source_issue_id,
        "mode": e.mode,
        "strategy_type": e.strategy_type,
        "name": e.name,
        "status": e.status,
        "closing": False,
        "cwd": e.cwd,
        "repo_url": e.repo_url,
        "base_ref": e.base_ref,
        "branch_name": e.branch_name,
        "node_id": e.node_id,
        "config": _plain(e.config),
        "lifecycle_generation": e.lifecycle_generation,
    }


def _project_workspace(
    e: we.ProjectWorkspaceCreated | we.ProjectWorkspaceUpdated,
) -> CopyFields:
    return {
        "project_id": e.project_id,
        "name": e.name,
        "cwd": e.cwd,
        "repo_url": e.repo_url,
        "repo_ref": e.repo_ref,
        "is_primary": e.is_primary,
        "deleted": False,
    }


def _issue(e: we.IssueCreated | we.IssueUpdated) -> CopyFields:
    return {
        "project_id": e.project_id,
        "identifier": e.identifier,
        "title": e.title,
        "project_workspace_id": e.project_workspace_id,
    }


def _realizer_note(e: Any) -> Note | None:
    """What a realizer event says, or None for one the supervisor does not copy."""
    match e:
        case ee.WorkspaceRealized():
            return "workspace", _workspace(e), ()
        case ee.WorkspaceReused():
            fields: CopyFields = {"last_used_at": e.last_used_at}
            return "workspace", fields, ("checkout_version",) if e.rebuilt else ()
        case ee.WorkspaceStatusChanged():
            fields = {"status": e.to_status, "lifecycle_generation": e.lifecycle_generation}
            return "workspace", fields, ()
        case ee.WorkspaceConfigChanged():
            return "workspace", {"config": _plain(e.config)}, ()
        case ee.WorkspaceArchiveStarted():
            fields = {"closing": True, "lifecycle_generation": e.lifecycle_generation}
            return "workspace", fields, ()
        case ee.WorkspaceArchived() | ee.WorkspaceCleanupFailed():
            status = "archived" if isinstance(e, ee.WorkspaceArchived) else "cleanup_failed"
            fields = {
                "status": status,
                "closing": False,
                "lifecycle_generation": e.lifecycle_generation,
            }
            return "workspace", fields, ()
        case ee.WorkspaceReopened():
            fields = {
                "status": "active",
                "closing": False,
                "cwd": e.cwd,
                "branch_name": e.branch_name,
                "lifecycle_generation": e.lifecycle_generation,
            }
            return "workspace", fields, ("checkout_version",)
        case ee.WorkspaceMoved():
            fields = {"node_id": e.to_node, "cwd": e.cwd}
            return "workspace", fields, ("checkout_version",)
        case ee.WorkspaceReopenFailed():
            return "workspace", {"lifecycle_generation": e.lifecycle_generation}, ()
        case ee.WorkspaceRenamed():
            return "workspace", {"name": e.name}, ()
        case ee.WorkspaceBranchReconciled():
            return "workspace", {"branch_name": e.branch_name, "name": e.name}, ()
    return _catalog_note(e)


def _catalog_note(e: Any) -> Note | None:
    match e:
        case we.ProjectCreated() | we.ProjectUpdated():
            egress = _plain(e.execution_workspace_policy.egress_allowlist)
            return "project", {"name": e.name, "egress_allowlist": egress, "deleted": False}, ()
        case we.ProjectDeleted():
            return "project", {"egress_allowlist": [], "deleted": True}, ()
        case we.ProjectWorkspaceCreated():
            fields: CopyFields = {
                **_project_workspace(e),
                "runtime_config": _plain(e.runtime_config),
                "managed_checkout": _plain(e.managed_checkout),
                "node_id": e.node_id,
            }
            return "project_workspace", fields, ()
        case we.ProjectWorkspaceUpdated():
            return "project_workspace", _project_workspace(e), ()
        case we.ProjectWorkspaceRuntimeConfigChanged():
            fields = {"project_id": e.project_id, "runtime_config": _plain(e.runtime_config)}
            return "project_workspace", fields, ()
        case we.ProjectWorkspaceCheckoutChanged():
            fields = {"project_id": e.project_id, "managed_checkout": _plain(e.managed_checkout)}
            return "project_workspace", fields, ()
        case we.ProjectWorkspaceMoved():  # cloned anew there: no checkout until it says so
            fields = {"project_id": e.project_id, "node_id": e.to_node, "managed_checkout": None}
            return "project_workspace", fields, ()
        case we.ProjectWorkspaceDeleted():
            return "project_workspace", {"project_id": e.project_id, "deleted": True}, ()
    return _issue_note(e)


def _issue_note(e: Any) -> Note | None:
    match e:
        case we.IssueCreated():
            fields: CopyFields = {
                **_issue(e),
                "status": e.status,
                "assignee_agent_id": e.assignee_agent_id,
                "deleted": False,
            }
            return "issue", fields, ()
        case we.IssueUpdated():
            return "issue", _issue(e), ()
        case we.IssueStatusChanged():
            return "issue", {"status": e.to_status}, ()
        case we.IssueAssigned():
            return "issue", {"assignee_agent_id": e.assignee_agent_id}, ()
        case we.IssueWorkspaceLinked():
            return "issue", {"execution_workspace_id": e.execution_workspace_id}, ()
        case we.IssueDeleted():
            return "issue", {"identifier": e.identifier, "deleted": True}, ()
    return None


def apply_realizer_event(
    app: RuntimeSupervisorApplication, event: Any, tracking: Tracking | None = None
) -> bool:
    """Note one realizer event in the copies (on the store's thread); return whether it is one
    the supervisor copies."""
    note = _realizer_note(event)
    if note is None:
        return False
    kind, fields, increments = note
    app.note_copy(
        kind, event.aggregate_id, event.company_id, fields, tracking, increments=increments
    )
    return True


def apply_controller_event(
    app: RuntimeSupervisorApplication,
    event: Any,
    tracking: Tracking | None = None,
    on_run_finished: RunFinishedHook | None = None,
) -> bool:
    """Note one controller event (on the store's thread); a finished run's leases are released
    in the same save, then ``on_run_finished`` hears of them. Return whether it was a run
    event."""
    match event:
        case re_.RunStarted():
            fields: CopyFields = {
                "agent_id": event.agent_id,
                "issue_id": event.issue_id,
                "workspace_id": event.workspace_id,
                "status": "running",
            }
            app.note_copy("run", event.aggregate_id, event.company_id, fields, tracking)
            return True
        case re_.RunWorkspaceLeased():
            # A run whose issue had no workspace yet starts without one and takes the lease of
            # the one realized for it: from then on it holds that workspace.
            fields = {"agent_id": event.agent_id, "workspace_id": event.workspace_id}
            fields["status"] = "running"
            if event.issue_id is not None:  # the event may leave it out: keep the started one's
                fields["issue_id"] = event.issue_id
            app.note_copy("run", event.aggregate_id, event.company_id, fields, tracking)
            return True
        case re_.RunFinished():
            fields = {
                "agent_id": event.agent_id,
                "issue_id": event.issue_id,
                "workspace_id": event.workspace_id,
                "status": event.status,
                "error_code": event.error_code,
            }
            releases = app.note_run_finished(event.aggregate_id, event.company_id, fields, tracking)
            if on_run_finished is not None:
                try:
                    on_run_finished(event.aggregate_id, releases)
                except Exception:  # saved already: a retry would skip it, so never fail here
                    logger.exception("on_run_finished failed", extra={"run_id": event.aggregate_id})
            return True
    return False


def realizer_inbox(app: RuntimeSupervisorApplication, event: Any, tracking: Tracking) -> None:
    """The handler of the realizer's events (``ServiceSpec.upstreams["realizer"]``)."""
    apply_realizer_event(app, event, tracking)


def apply_gateway_event(
    app: RuntimeSupervisorApplication, event: Any, tracking: Tracking | None = None
) -> bool:
    """Note a company's host access (``company.host_access_changed.v1``: a ``hostTrusted``
    company's commands run unconfined, docs/design/isolation.md); return whether it was one."""
    match event:
        case ge.CompanyHostAccessChanged(company_id=str() as company_id) if company_id:
            roots = list(event.allowed_roots)
            fields: CopyFields = {"host_trusted": event.host_trusted, "allowed_roots": roots}
            app.note_copy("company", company_id, company_id, fields, tracking)
            return True
    return False


def gateway_inbox(app: RuntimeSupervisorApplication, event: Any, tracking: Tracking) -> None:
    """The handler of the gateway's events (``ServiceSpec.upstreams["gateway"]``)."""
    apply_gateway_event(app, event, tracking)


def controller_inbox(
    hooks: RunFinishedHandOver,
) -> Callable[[RuntimeSupervisorApplication, Any, Tracking], None]:
    """The handler of the controller's events (``ServiceSpec.upstreams["controller"]``): a
    finished run's releases are saved, then told to the orchestration's hook (waited for when
    the message comes before ``register`` handed it over)."""

    def told(run_id: str, releases: list[Release]) -> None:
        hooks.get()(run_id, releases)

    def handle(app: RuntimeSupervisorApplication, event: Any, tracking: Tracking) -> None:
        apply_controller_event(app, event, tracking, told)

    return handle
