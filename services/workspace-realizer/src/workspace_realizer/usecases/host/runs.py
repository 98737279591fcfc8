"""Use cases of the controller's run events (the realizer's inbox from the heartbeat-controller).

Workspace status follows runs (DECISIONS 12, ARCHITECTURE §1): ``active`` while a run holds the
workspace's run lease; once no run does, ``in_review`` if its source issue is ``in_review``, else
``idle``. Which runs hold each workspace is kept on the workspace's own (private) events, so the
copy is rebuilt from the realizer's store; each status change is the public
``workspace.status_changed.v1``, carrying the run and a reason.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from contracts.run_events import RunFinished, RunWorkspaceLeased, RunWorkspaceReleased
from eventstore import acting, current_cause, system_cause
from workspace_realizer.settings import SERVICE_NAME
from workspace_realizer.usecases.host.queries import WorkspaceQueries

if TYPE_CHECKING:
    from eventsourcing.persistence import Tracking

    from eventstore import Cause
    from workspace_realizer.domain.host import ExecutionWorkspace

__all__ = ["RunLeaseUseCases"]


class RunLeaseUseCases(WorkspaceQueries):
    """Follow which runs hold each workspace."""

    def note_run_event(self, event: Any, tracking: Tracking) -> None:
        """Apply one controller event, saved with its inbox position (other events: the
        position alone). A lease the run holds already, or a release of a lease it does not
        hold, changes nothing (a redelivery, or ``run.finished`` after the release)."""
        if isinstance(event, RunWorkspaceLeased):
            self._lease(event.aggregate_id, event.workspace_id, tracking)
        elif isinstance(event, RunWorkspaceReleased):
            self._release(event.aggregate_id, event.workspace_id, "released", tracking)
        elif isinstance(event, RunFinished) and event.workspace_id:
            self._release(event.aggregate_id, event.workspace_id, "finished", tracking)
        else:
            self.save_with_tracking(tracking=tracking)

    def _lease(self, run_id: str, workspace_id: str, tracking: Tracking) -> None:
        workspace = self._held(workspace_id)
        if workspace is None:
            self.save_with_tracking(tracking=tracking)
            return
        reason = f"run {run_id} holds the workspace's run lease"
        with acting(_cause(run_id, reason)):
            workspace.hold_for_run(run_id, self.now())
        self.save_with_tracking(workspace, tracking=tracking)

    def _release(self, run_id: str, workspace_id: str, how: str, tracking: Tracking) -> None:
        workspace = self._held(workspace_id)
        if workspace is None or run_id not in workspace.run_ids:
            self.save_with_tracking(tracking=tracking)
            return
        source = self.issues.get(workspace.source_issue_id)
        in_review = source is not None and not source.deleted and source.status == "in_review"
        after = "in_review: its source issue is in review" if in_review else "idle"
        reason = f"run {run_id} {how}; no run holds the workspace ({after})"
        if len(workspace.run_ids) > 1:
            reason = f"run {run_id} {how}; other runs still hold the workspace"
        with acting(_cause(run_id, reason)):
            workspace.release_run(run_id, self.now(), source_in_review=in_review)
        self.save_with_tracking(workspace, tracking=tracking)

    def _held(self, workspace_id: str) -> ExecutionWorkspace | None:
        """The workspace to change, or None when this realizer has none with that id."""
        if workspace_id not in self.workspaces:
            return None
        workspace: ExecutionWorkspace = self.load(workspace_id)
        return workspace


def _cause(run_id: str, reason: str) -> Cause:
    """The inbox's cause (the realizer reacting), naming the run and why."""
    base = current_cause() or system_cause(SERVICE_NAME)
    return replace(base, run_id=run_id, reason=reason)
