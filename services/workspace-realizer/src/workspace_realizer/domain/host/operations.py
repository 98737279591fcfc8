"""Workspace operations: every git or shell step the realizer ran on the host (reference §1.11),
with the tail of its output. The full (capped) output lives in files the byte-range endpoint reads."""

from __future__ import annotations

import sys
from datetime import datetime

from eventsourcing.domain import event

from eventstore.topics import keep_old_topics
from servicekit.workspace_audit import EXCERPT_BYTES, RefIdentified, excerpt
from workspace_realizer.domain.base import CompanyScoped
from workspace_realizer.domain.host.records import StepFacts

__all__ = ["EXCERPT_BYTES", "WorkspaceOperation", "excerpt"]


class WorkspaceOperation(RefIdentified, CompanyScoped):
    """One host step: what ran, where, how it ended, and the tail of its output.

    A step is recorded when it has ended, or, for one that may take long (a clone, a provision
    command), when it begins (``status`` ``running``, no ``finished_at``) and again when it ends
    (``Finished``); its output files grow meanwhile. ``heartbeat_run_id`` is the run it was done
    for (the acting cause's run, if any).
    """

    # ``node_id`` comes before ``*``: eventsourcing takes every keyword-only parameter as required,
    # default or not, and records stored before it existed have none.
    @event("Recorded")
    def __init__(
        self,
        node_id: str | None = None,
        *,
        operation_ref: str,
        company_id: str,
        execution_workspace_id: str | None,
        project_workspace_id: str | None,
        issue_id: str | None,
        operation_id: str | None,
        heartbeat_run_id: str | None,
        phase: str,
        command: str,
        cwd: str,
        status: str,
        exit_code: int | None,
        started_at: datetime,
        finished_at: datetime | None,
        stdout_excerpt: str,
        stderr_excerpt: str,
        truncated: bool,
        stdout_bytes: int,
        stderr_bytes: int,
        log_dir: str | None,
        metadata: StepFacts,
    ) -> None:
        self.company_id = company_id
        self.execution_workspace_id = execution_workspace_id
        self.project_workspace_id = project_workspace_id
        self.issue_id = issue_id
        self.operation_id = operation_id
        self.run_id = heartbeat_run_id
        self.phase = phase
        self.command = command
        self.cwd = cwd
        self.status = status
        self.exit_code = exit_code
        self.started_at = started_at
        self.finished_at = finished_at
        self.stdout_excerpt = stdout_excerpt
        self.stderr_excerpt = stderr_excerpt
        self.truncated = truncated
        self.stdout_bytes = stdout_bytes
        self.stderr_bytes = stderr_bytes
        self.log_dir = log_dir
        self.metadata = metadata
        self.node_id = node_id
        """The node whose host ran it (None for steps recorded before nodes were kept)."""

    @event("Finished")
    def finish(
        self,
        *,
        status: str,
        exit_code: int | None,
        finished_at: datetime,
        stdout_excerpt: str,
        stderr_excerpt: str,
        truncated: bool,
        stdout_bytes: int,
        stderr_bytes: int,
        metadata: StepFacts,
    ) -> None:
        """The step that began ``running`` has ended."""
        self.status = status
        self.exit_code = exit_code
        self.finished_at = finished_at
        self.stdout_excerpt = stdout_excerpt
        self.stderr_excerpt = stderr_excerpt
        self.truncated = truncated
        self.stdout_bytes = stdout_bytes
        self.stderr_bytes = stderr_bytes
        self.metadata = metadata


# Events stored before this module moved here (issue 16) name it workspace_realizer.domain.operations.
keep_old_topics("workspace_realizer.domain.operations", sys.modules[__name__])
