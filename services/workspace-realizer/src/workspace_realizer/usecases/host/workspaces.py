"""Use cases of execution workspaces and workspace operations.

The host work (git, commands) happens in the orchestrators (``orchestration/realize.py``, ``archive.py``,
``reopen.py``) off the store thread; these record what it did, each in one save.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast

from workspace_realizer.domain import Issue
from workspace_realizer.domain.errors import FenceError
from workspace_realizer.domain.host import ExecutionWorkspace, WorkspaceOperation
from workspace_realizer.domain.host.records import (
    ArchiveOutcome,
    OperationEnding,
    OperationRecord,
    ReconcileRecord,
    RescueRefRecord,
    WorkspaceChanges,
    WorkspaceConfig,
    WorkspaceConfigPatch,
    WorkspaceRealization,
)
from workspace_realizer.domain.runtime_config import normalize_runtime_config
from workspace_realizer.usecases.host.queries import WorkspaceQueries

if TYPE_CHECKING:
    from eventsourcing.domain import Aggregate

    from servicekit.access import Access

__all__ = ["CONFIG_KEYS", "WorkspaceUseCases"]

CONFIG_KEYS = (
    "provisionCommand",
    "runtimeProvisionCommand",
    "teardownCommand",
    "cleanupCommand",
    "workspaceRuntime",
)


class WorkspaceUseCases(WorkspaceQueries):
    """Record realizations, lifecycle steps and host operations; change workspaces."""

    def record_realized(self, facts: WorkspaceRealization) -> ExecutionWorkspace:
        """Save a newly realized workspace and make it its source issue's current one."""
        workspace = ExecutionWorkspace.realize(facts, self.now())
        issue: Issue = self.load(facts.source_issue_id)
        issue.link_workspace(str(workspace.id))
        self.save(workspace, issue)
        return self.workspaces[str(workspace.id)]

    def record_reused(
        self, workspace_id: str, issue_id: str, *, rebuilt: bool, warnings: list[str]
    ) -> ExecutionWorkspace:
        """An open workspace is used again (by ``issue_id``), which becomes linked to it."""
        workspace: ExecutionWorkspace = self.load(workspace_id)
        workspace.reuse(self.now(), issue_id=issue_id, rebuilt=rebuilt, warnings=warnings)
        issue: Issue = self.load(issue_id)
        issue.link_workspace(workspace_id)
        self.save(workspace, issue)
        return self.workspaces[workspace_id]

    def record_provision(
        self, workspace_id: str, operation_id: str | None, error: str | None
    ) -> None:
        """The provision command's outcome (``error`` None: succeeded or nothing to run)."""
        workspace: ExecutionWorkspace = self.load(workspace_id)
        if error is None:
            workspace.record_provisioned(operation_id=operation_id)
        else:
            workspace.record_provision_failed(operation_id=operation_id, error=error)
        self.save(workspace)

    def update_workspace(
        self, access: Access, workspace_id: str, changes: WorkspaceChanges
    ) -> ExecutionWorkspace:
        """Rename, move between open statuses, patch the config, or schedule cleanup (board
        only: agents read workspaces). ``changes``: ``name``, ``status``, ``config`` (a patch),
        ``cleanup_eligible_at``."""
        access.check_board("change an execution workspace; agents may read it")
        current = self.workspace_of(access, workspace_id)
        if "config" in changes:
            config = _patched(current.config, changes["config"])
        workspace: ExecutionWorkspace = self.load(workspace_id)
        if "name" in changes:
            workspace.rename(changes["name"])
        if "status" in changes:
            workspace.change_status(changes["status"], self.now())
        if "config" in changes:
            workspace.change_config(config)
        if "cleanup_eligible_at" in changes:
            workspace.schedule_cleanup(_aware(changes["cleanup_eligible_at"]))
        self.save(workspace)
        return self.workspaces[workspace_id]

    # -- archive and reopen ----------------------------------------------------------------

    def start_archive(
        self, workspace_id: str, *, trigger: str, expected_generation: int | None = None
    ) -> int:
        """Begin the archive saga; return its lifecycle generation."""
        workspace: ExecutionWorkspace = self.load(workspace_id)
        generation = workspace.start_archive(
            self.now(), trigger=trigger, expected_generation=expected_generation
        )
        self.save(workspace)
        return generation

    def finish_archive(
        self, workspace_id: str, generation: int, outcome: ArchiveOutcome
    ) -> ExecutionWorkspace | None:
        """Record the verified cleanup and detach ``outcome.detached_issue_ids``; None when a
        newer generation fenced the step off."""
        workspace: ExecutionWorkspace = self.load(workspace_id)
        try:
            workspace.finish_archive(generation, self.now(), outcome)
        except FenceError:
            return None
        detached = []
        for issue_id in outcome.detached_issue_ids:
            issue: Issue = self.load(issue_id)
            issue.unlink_workspace(workspace_id)
            detached.append(issue)
        self.save(workspace, *detached)
        return self.workspaces[workspace_id]

    def fail_cleanup(
        self,
        workspace_id: str,
        generation: int,
        *,
        error: str,
        rescue_ref: RescueRefRecord | None,
        operation_id: str | None,
    ) -> ExecutionWorkspace | None:
        """Record that cleanup could not be verified; None when fenced off."""
        workspace: ExecutionWorkspace = self.load(workspace_id)
        try:
            workspace.fail_cleanup(
                generation,
                self.now(),
                error=error,
                rescue_ref=rescue_ref,
                operation_id=operation_id,
            )
        except FenceError:
            return None
        self.save(workspace)
        return self.workspaces[workspace_id]

    def record_reopen(
        self,
        workspace_id: str,
        generation: int,
        *,
        error: str | None,
        restored_from: RescueRefRecord | None,
        operation_id: str | None,
    ) -> ExecutionWorkspace:
        """The reopen's outcome: ``active`` again, or still closed with ``reopen_failed``."""
        workspace: ExecutionWorkspace = self.load(workspace_id)
        if error is None:
            workspace.reopen(
                generation, self.now(), restored_from=restored_from, operation_id=operation_id
            )
        else:
            workspace.fail_reopen(generation, self.now(), error=error, operation_id=operation_id)
        self.save(workspace)
        return self.workspaces[workspace_id]

    def record_reconcile(
        self, workspace_id: str, mode: str, reason: str | None, outcome: ReconcileRecord
    ) -> ExecutionWorkspace:
        """Record a branch reconcile (what it did on the host: ``outcome``)."""
        workspace: ExecutionWorkspace = self.load(workspace_id)
        workspace.reconcile_branch(
            mode=mode,
            reason=reason,
            to_branch=outcome.to_branch,
            inspection=outcome.inspection,
            rescue_ref=outcome.rescue_ref,
        )
        self.save(workspace)
        return self.workspaces[workspace_id]

    # -- operations ------------------------------------------------------------------------

    def record_operation(self, fields: OperationRecord) -> str:
        """Record one host step, finished or beginning; return the workspace operation's id."""
        operation = WorkspaceOperation(**fields)
        self.save(operation)
        return str(operation.id)

    def finish_operation(self, operation_ref: str, ending: OperationEnding) -> None:
        """Record how a step recorded ``running`` ended (once: a step already ended is left)."""
        operation: WorkspaceOperation = self.load(operation_ref)
        if operation.status != "running":
            return
        operation.finish(**ending)
        self.save(operation)

    def stamp(self) -> datetime:
        """The store's notion of now (for orchestrators that compare with stored times)."""
        return self.now()

    def issue_followers(self, issue: Issue) -> list[Aggregate]:
        """The issue's open workspace, moved along with its ``in_review`` status, to save with
        the issue's change (the company-wide part's hook, :meth:`Queries.issue_followers`)."""
        workspace_id = issue.execution_workspace_id
        live = self.workspaces.get(workspace_id or "")
        if live is None or not live.is_open or live.closing:
            return []
        target = "in_review" if issue.status == "in_review" else None
        if target is None and live.status == "in_review":
            # Out of review: ``active`` while a run holds it, else ``idle`` (DECISIONS 12).
            target = "active" if live.run_ids else "idle"
        if target is None or target == live.status:
            return []
        workspace: ExecutionWorkspace = self.load(str(live.id))
        workspace.change_status(target, self.now())
        return [workspace]


def _aware(at: datetime | None) -> datetime | None:
    """A naive time is taken as UTC (the reaper compares it with aware times)."""
    return at.replace(tzinfo=UTC) if at is not None and at.tzinfo is None else at


def _patched(config: WorkspaceConfig, patch: WorkspaceConfigPatch) -> WorkspaceConfig:
    """Merge a config patch key by key: ``None`` clears a key; a runtime override is validated."""
    # A key the patch sets keeps its place, a new one comes last, as the stored configs have it.
    merged = cast(
        "WorkspaceConfig",
        {key: value for key, value in {**config, **patch}.items() if value is not None},
    )
    normalize_runtime_config(merged.get("workspaceRuntime"), field="config.workspaceRuntime")
    return merged
