"""Execution workspaces: the checkout an issue's work happens in (reference §1.5), realized by
the realizer and used by runs; the lifecycle (archive, reopen) is :mod:`.lifecycle`'s."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Final
from uuid import UUID

from eventsourcing.domain import event

from eventstore.topics import keep_old_topics
from workspace_realizer.domain.errors import (
    BranchReconcileRefusedError,
    InvalidInputError,
    StateConflictError,
)
from workspace_realizer.domain.host.lifecycle import OPEN_STATUSES, WorkspaceLifecycle
from workspace_realizer.domain.host.records import (
    ReconcileInspection,
    RescueRefRecord,
    WorkspaceConfig,
    WorkspaceRealization,
)
from workspace_realizer.domain.names import check_name

__all__ = ["REUSABLE_MODES", "ExecutionWorkspace"]

REUSABLE_MODES: Final = frozenset(
    {"isolated_workspace", "operator_branch", "adapter_managed", "cloud_sandbox"}
)


class ExecutionWorkspace(WorkspaceLifecycle):
    """A realized checkout (shared primary checkout, git worktree, or adapter-managed).

    Created with the realization's facts (see :meth:`__init__`): ``workspace_id`` (chosen before
    the host work, so its steps can name it), ``company_id``, ``project_id``,
    ``project_workspace_id``, ``source_issue_id``, ``mode``, ``strategy_type``, ``provider_type``,
    ``provider_ref``, ``name``, ``cwd``, ``repo_url``, ``base_ref``, ``base_ref_sha``,
    ``branch_name``, ``branch_created`` (Clipyard created the branch: it may delete it),
    ``created_worktree``, ``node_id``, ``config``, ``operation_id``, ``warnings``, ``at``.
    """

    @staticmethod
    def create_id(workspace_id: str) -> UUID:
        """The id is chosen before realizing, so host steps can name the workspace."""
        return UUID(workspace_id)

    @classmethod
    def realize(cls, facts: WorkspaceRealization, at: datetime) -> ExecutionWorkspace:
        """A newly realized workspace with ``facts``, at ``at``."""
        return cls(
            workspace_id=facts.workspace_id,
            company_id=facts.company_id,
            project_id=facts.project_id,
            project_workspace_id=facts.project_workspace_id,
            source_issue_id=facts.source_issue_id,
            mode=facts.mode,
            strategy_type=facts.strategy_type,
            provider_type=facts.provider_type,
            provider_ref=facts.provider_ref,
            name=facts.name,
            cwd=facts.cwd,
            repo_url=facts.repo_url,
            base_ref=facts.base_ref,
            base_ref_sha=facts.base_ref_sha,
            branch_name=facts.branch_name,
            branch_created=facts.branch_created,
            created_worktree=facts.created_worktree,
            node_id=facts.node_id,
            config=facts.config,
            operation_id=facts.operation_id,
            warnings=facts.warnings,
            at=at,
        )

    @event("Realized")
    def __init__(
        self,
        *,
        workspace_id: str,
        company_id: str,
        project_id: str,
        project_workspace_id: str | None,
        source_issue_id: str,
        mode: str,
        strategy_type: str,
        provider_type: str,
        provider_ref: str | None,
        name: str,
        cwd: str | None,
        repo_url: str | None,
        base_ref: str | None,
        base_ref_sha: str | None,
        branch_name: str | None,
        branch_created: bool,
        created_worktree: bool,
        node_id: str,
        config: WorkspaceConfig,
        operation_id: str | None,
        warnings: list[str],
        at: datetime,
    ) -> None:
        self.company_id, self.project_id = company_id, project_id
        self.project_workspace_id, self.source_issue_id = project_workspace_id, source_issue_id
        self.mode, self.strategy_type = mode, strategy_type
        self.provider_type, self.provider_ref = provider_type, provider_ref
        self.name, self.cwd, self.repo_url = name, cwd, repo_url
        self.base_ref, self.base_ref_sha = base_ref, base_ref_sha
        self.branch_name, self.branch_created = branch_name, branch_created
        self.node_id, self.config = node_id, config
        self.status = "active"
        self.provision_state = "none"
        self.lifecycle_generation = 0
        self.closing = False
        self.opened_at = self.last_used_at = at
        self.closed_at: datetime | None = None
        self.cleanup_reason: str | None = None
        self.cleanup_eligible_at: datetime | None = None
        self.reopened_at: datetime | None = None
        self.rescue_refs: list[RescueRefRecord] = []
        self.run_ids: list[str] = []

    # -- use -------------------------------------------------------------------------------

    def reuse(
        self, at: datetime, *, issue_id: str | None, rebuilt: bool, warnings: list[str]
    ) -> None:
        """A realization reuses the workspace (rebuilt: its worktree was missing and recreated)."""
        self.check_open()
        self._reused(at=at, issue_id=issue_id, rebuilt=rebuilt, warnings=warnings)

    @event("Reused")
    def _reused(
        self, at: datetime, issue_id: str | None, rebuilt: bool, warnings: list[str]
    ) -> None:
        self.last_used_at = at
        self.reopened_at = None

    def move(
        self,
        to_node: str,
        cwd: str | None,
        rescue: RescueRefRecord | None,
        operation_id: str | None,
    ) -> None:
        """A drain rebuilt it on ``to_node`` at ``cwd``, or carried a closed one's rescue
        commits there (docs/scale-out.md, "Draining a node").

        Raises:
            StateConflictError: It is being archived.
        """
        if self.closing:
            raise StateConflictError(
                "The workspace is being archived; it moves once that ends.",
                workspaceId=str(self.id),
            )
        self._moved(
            from_node=self.node_id,
            to_node=to_node,
            cwd=cwd,
            branch_name=self.branch_name,
            generation=self.lifecycle_generation,
            rescue_ref=rescue,
            operation_id=operation_id,
        )

    @event("Moved")
    def _moved(
        self,
        from_node: str | None,
        to_node: str,
        cwd: str | None,
        branch_name: str | None,
        generation: int,
        rescue_ref: RescueRefRecord | None,
        operation_id: str | None,
    ) -> None:
        self.node_id, self.cwd = to_node, cwd
        if self.provider_type == "git_worktree":
            self.provider_ref = cwd

    @event("Provisioned")
    def record_provisioned(self, operation_id: str | None) -> None:
        """The provision command succeeded (or there was none to run)."""
        self.provision_state = "succeeded"

    @event("ProvisionFailed")
    def record_provision_failed(self, operation_id: str | None, error: str) -> None:
        """The provision command failed; the next realization runs it again."""
        self.provision_state = "failed"

    def rename(self, name: str) -> None:
        """Give the workspace another display name."""
        name = check_name(name, what="workspace")
        if name != self.name:
            self._renamed(name=name)

    @event("Renamed")
    def _renamed(self, name: str) -> None:
        self.name = name

    def change_config(self, config: WorkspaceConfig) -> None:
        """Replace the workspace's own commands and runtime override (board only)."""
        before, after = dict(self.config), dict(config)
        changed = sorted(k for k in {*after, *before} if after.get(k) != before.get(k))
        if changed:
            self._config_changed(config=config, changed_keys=changed)

    @event("ConfigChanged")
    def _config_changed(self, config: WorkspaceConfig, changed_keys: list[str]) -> None:
        self.config = config

    def change_status(self, status: str, at: datetime) -> None:
        """Move an open workspace between ``active``, ``idle`` and ``in_review``.

        Raises:
            InvalidInputError: Not an open status (archive and reopen are their own flows).
            StateConflictError: The workspace is closed or closing.
        """
        if status not in OPEN_STATUSES:
            raise InvalidInputError(
                f"Status {status!r} is not one of {', '.join(OPEN_STATUSES)}.", field="status"
            )
        self.check_open()
        if status != self.status:
            self._status_changed(
                status=status, previous=self.status, generation=self.lifecycle_generation, at=at
            )

    @event("StatusChanged")
    def _status_changed(self, status: str, previous: str, generation: int, at: datetime) -> None:
        self.status = status

    # -- run leases (the controller's, DECISIONS 12) ---------------------------------------

    def hold_for_run(self, run_id: str, at: datetime) -> bool:
        """A run took the workspace's run lease: the workspace is ``active`` while a run holds
        it (a closed or closing one keeps its status). False when the run held it already."""
        if run_id in self.run_ids:
            return False
        self._run_leased(run=run_id, at=at)
        if self.is_open and not self.closing and self.status != "active":
            self._status_changed(
                status="active", previous=self.status, generation=self.lifecycle_generation, at=at
            )
        return True

    def release_run(self, run_id: str, at: datetime, *, source_in_review: bool) -> bool:
        """A run gave the lease back (or finished): once no run holds the workspace, it is
        ``in_review`` if its source issue is, else ``idle``. False when the run did not hold it."""
        if run_id not in self.run_ids:
            return False
        self._run_released(run=run_id, at=at)
        if self.run_ids or not self.is_open or self.closing:
            return True
        target = "in_review" if source_in_review else "idle"
        if target != self.status:
            self._status_changed(
                status=target, previous=self.status, generation=self.lifecycle_generation, at=at
            )
        return True

    # ``run``, not ``run_id``: every stored event carries its cause's ``run_id`` already.
    @event("RunLeased")
    def _run_leased(self, run: str, at: datetime) -> None:
        self.run_ids = [*self.run_ids, run]
        self.last_used_at = at

    @event("RunReleased")
    def _run_released(self, run: str, at: datetime) -> None:
        self.run_ids = [held for held in self.run_ids if held != run]

    def schedule_cleanup(self, at: datetime | None) -> None:
        """When the reaper may consider the workspace (None: its own rules)."""
        if at != self.cleanup_eligible_at:
            self._cleanup_scheduled(at=at)

    @event("CleanupScheduled")
    def _cleanup_scheduled(self, at: datetime | None) -> None:
        self.cleanup_eligible_at = at

    # -- branch reconcile ------------------------------------------------------------------

    def check_reconcilable(self) -> None:
        """Raise ``BranchReconcileRefusedError`` unless this is an idle git worktree with a
        recorded branch (reference §5.6: no run may hold it)."""
        if not self.is_worktree or not self.branch_name:
            raise BranchReconcileRefusedError(
                "Only a git worktree with a recorded branch can be reconciled.",
                workspaceId=str(self.id),
            )
        if self.closing or self.status != "idle":
            raise BranchReconcileRefusedError(
                f"Branch reconcile needs an idle workspace; this one is "
                f"{'being archived' if self.closing else self.status}.",
                workspaceId=str(self.id),
                status=self.status,
            )

    def reconcile_branch(
        self,
        *,
        mode: str,
        reason: str | None,
        to_branch: str | None,
        inspection: ReconcileInspection,
        rescue_ref: RescueRefRecord | None,
    ) -> None:
        """Record a reconcile: ``forward``/``override`` move the record to the live branch (and
        the name, when it was the branch's); ``quarantine_restore`` keeps the recorded one."""
        self.check_reconcilable()
        branch = to_branch if mode in ("forward", "override") and to_branch else self.branch_name
        name = branch if self.name == self.branch_name and branch else self.name
        self._branch_reconciled(
            mode=mode,
            operator_reason=reason,
            inspection=inspection,
            branch_name=branch,
            name=name,
            rescue_ref=rescue_ref,
        )

    @event("BranchReconciled")
    def _branch_reconciled(
        self,
        mode: str,
        operator_reason: str | None,
        inspection: ReconcileInspection,
        branch_name: str | None,
        name: str,
        rescue_ref: RescueRefRecord | None,
    ) -> None:
        if branch_name != self.branch_name:
            # A branch Clipyard did not create is never deleted by archive (DECISIONS 3).
            self.branch_created = False
        self.branch_name, self.name = branch_name, name
        self.rescue_refs = [*self.rescue_refs, *([rescue_ref] if rescue_ref else [])]


# Events stored before this module moved here (issue 16) name it workspace_realizer.domain.workspaces.
keep_old_topics("workspace_realizer.domain.workspaces", sys.modules[__name__])
