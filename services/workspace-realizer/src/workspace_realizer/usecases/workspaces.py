"""Use cases of execution workspaces and workspace operations.

The host work (git, commands) happens in the orchestrators (``realize.py``, ``archive.py``,
``reopen.py``) off the store thread; these record what it did, each in one save.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from workspace_realizer.domain import ExecutionWorkspace, Issue, WorkspaceOperation
from workspace_realizer.domain.errors import FenceError
from workspace_realizer.domain.runtime_config import normalize_runtime_config
from workspace_realizer.usecases.queries import Queries

if TYPE_CHECKING:
    from servicekit.access import Access

__all__ = ["CONFIG_KEYS", "WorkspaceUseCases"]

CONFIG_KEYS = (
    "provisionCommand",
    "runtimeProvisionCommand",
    "teardownCommand",
    "cleanupCommand",
    "workspaceRuntime",
)


class WorkspaceUseCases(Queries):
    """Record realizations, lifecycle steps and host operations; change workspaces."""

    def record_realized(self, fields: Mapping[str, Any]) -> ExecutionWorkspace:
        """Save a newly realized workspace and make it its source issue's current one."""
        workspace = ExecutionWorkspace(at=self.now(), **fields)
        issue: Issue = self.load(fields["source_issue_id"])
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
        self, access: Access, workspace_id: str, changes: Mapping[str, Any]
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
        self, workspace_id: str, generation: int, outcome: Mapping[str, Any]
    ) -> ExecutionWorkspace | None:
        """Record the verified cleanup and detach ``outcome['detached_issue_ids']``; None when a
        newer generation fenced the step off."""
        workspace: ExecutionWorkspace = self.load(workspace_id)
        try:
            workspace.finish_archive(generation, self.now(), **outcome)
        except FenceError:
            return None
        detached = []
        for issue_id in outcome.get("detached_issue_ids", []):
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
        rescue_ref: dict[str, Any] | None,
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
        restored_from: dict[str, Any] | None,
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
        self, workspace_id: str, mode: str, reason: str | None, outcome: Mapping[str, Any]
    ) -> ExecutionWorkspace:
        """Record a branch reconcile (``outcome``: ``to_branch``, ``inspection``, ``rescue_ref``)."""
        workspace: ExecutionWorkspace = self.load(workspace_id)
        workspace.reconcile_branch(mode=mode, reason=reason, **outcome)
        self.save(workspace)
        return self.workspaces[workspace_id]

    # -- operations ------------------------------------------------------------------------

    def record_operation(self, fields: Mapping[str, Any]) -> str:
        """Record one finished host step; return the workspace operation's id."""
        operation = WorkspaceOperation(**fields)
        self.save(operation)
        return str(operation.id)

    def stamp(self) -> datetime:
        """The store's notion of now (for orchestrators that compare with stored times)."""
        return self.now()


def _aware(at: datetime | None) -> datetime | None:
    """A naive time is taken as UTC (the reaper compares it with aware times)."""
    return at.replace(tzinfo=UTC) if at is not None and at.tzinfo is None else at


def _patched(config: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """Merge a config patch key by key: ``None`` clears a key; a runtime override is validated."""
    merged = dict(config)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    normalize_runtime_config(merged.get("workspaceRuntime"), field="config.workspaceRuntime")
    return merged
