"""The supervisor's workspace operations (reference §1.11, §6.10-§6.11): every job run, start,
stop or restart action and runtime provisioning it did against a workspace, with the tail of its
output. Same row shape as the realizer's; the full (capped) output lives in files under
``$CLIPYARD_HOME/operations/<id>/`` that the byte-range query reads (``outputs.py``)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Final, TypedDict

from eventsourcing.domain import event

from runtime_supervisor.domain.base import CompanyScoped
from runtime_supervisor.domain.errors import StateConflictError
from runtime_supervisor.domain.leases import ReclaimedFrom
from servicekit.workspace_audit import EXCERPT_BYTES, RefIdentified, excerpt

if TYPE_CHECKING:
    from contracts.runtime_commands import RuntimeLeaseOutcome

__all__ = [
    "EXCERPT_BYTES",
    "OPERATION_STATUSES",
    "OperationMetadata",
    "RuntimeLeaseMetadata",
    "SupervisorOperation",
    "excerpt",
    "lease_metadata",
]

OPERATION_STATUSES: Final = ("running", "succeeded", "failed", "skipped")


class RuntimeLeaseMetadata(TypedDict):
    """The runtime-control lease an action ran under (``RuntimeLeaseOutcome`` as stored)."""

    outcome: str
    ownerKey: str | None
    reclaimedFrom: ReclaimedFrom | None


class OperationMetadata(TypedDict, total=False):
    """What the supervisor shows with an operation (its ``metadata``), as stored: set when it
    begins, added to when it ends; each kind of step sets some of these."""

    action: str
    """``start``, ``stop``, ``restart`` or ``run`` (control actions, the archive's stop)."""
    reason: str
    runtimeServiceIds: list[str]
    workspaceCommandKind: str
    """``service``, ``job`` or ``runtime_provision``."""
    workspaceCommandId: str | None
    workspaceCommandName: str | None
    serviceIndex: int | None
    runtimeServiceId: str | None
    runtimeLease: RuntimeLeaseMetadata
    label: str
    exitSignal: int | None
    timedOut: bool
    outcome: str
    stdoutTotalBytes: int
    stderrTotalBytes: int


def lease_metadata(lease: RuntimeLeaseOutcome) -> RuntimeLeaseMetadata:
    """The lease an action ran under, as its operation's metadata stores it."""
    taken_from = lease.reclaimed_from
    return {
        "outcome": lease.outcome,
        "ownerKey": lease.owner_key,
        "reclaimedFrom": (
            {"ownerKey": taken_from.owner_key, "reason": taken_from.reason} if taken_from else None
        ),
    }


class SupervisorOperation(RefIdentified, CompanyScoped):
    """One host step of the supervisor: recorded ``running`` when it begins, then finished with
    its status, exit code and output excerpts.

    ``heartbeat_run_id`` is the run it was done for; ``operation_id`` the long operation
    (``GET /api/operations/{id}``) it belongs to. ``node_id`` is the worker node it ran on,
    which holds its output files (None: recorded before worker nodes).
    """

    event_aggregate = "workspace_operation"

    node_id: str | None = None

    @event("Began")
    def __init__(
        self,
        *,
        operation_ref: str,
        company_id: str,
        target_key: str,
        execution_workspace_id: str | None,
        project_workspace_id: str | None,
        issue_id: str | None,
        operation_id: str | None,
        heartbeat_run_id: str | None,
        phase: str,
        command: str,
        cwd: str,
        started_at: datetime,
        metadata: OperationMetadata,
        node_id: str | None = None,
    ) -> None:
        self.company_id = company_id
        self.node_id = node_id
        self.target_key = target_key
        self.execution_workspace_id = execution_workspace_id
        self.project_workspace_id = project_workspace_id
        self.issue_id, self.operation_id = issue_id, operation_id
        self.run_id = heartbeat_run_id
        self.phase, self.command, self.cwd = phase, command, cwd
        self.status = "running"
        self.exit_code: int | None = None
        self.started_at = started_at
        self.finished_at: datetime | None = None
        self.stdout_excerpt = self.stderr_excerpt = ""
        self.truncated = False
        self.stdout_bytes = self.stderr_bytes = 0
        self.log_dir: str | None = None
        self.metadata: OperationMetadata = metadata.copy()

    def finish(
        self,
        *,
        status: str,
        exit_code: int | None,
        finished_at: datetime,
        stdout: bytes,
        stderr: bytes,
        truncated: bool,
        log_dir: str | None,
        metadata: OperationMetadata | None = None,
    ) -> None:
        """Record how it ended, with the last 64 KiB of each stream.

        Raises:
            StateConflictError: It was finished already.
            ValueError: ``status`` is not a finished status.
        """
        if self.status != "running":
            raise StateConflictError(
                "This workspace operation is finished already.", operationId=str(self.id)
            )
        if status not in OPERATION_STATUSES[1:]:
            raise ValueError(f"a finished operation is {', '.join(OPERATION_STATUSES[1:])}")
        out, cut_out = excerpt(stdout)
        err, cut_err = excerpt(stderr)
        self._finished(
            status=status,
            exit_code=exit_code,
            finished_at=finished_at,
            stdout_excerpt=out,
            stderr_excerpt=err,
            truncated=truncated or cut_out or cut_err,
            stdout_bytes=len(stdout),
            stderr_bytes=len(stderr),
            log_dir=log_dir,
            metadata={**self.metadata, **(metadata or {})},
        )

    @event("Finished")
    def _finished(
        self,
        status: str,
        exit_code: int | None,
        finished_at: datetime,
        stdout_excerpt: str,
        stderr_excerpt: str,
        truncated: bool,
        stdout_bytes: int,
        stderr_bytes: int,
        log_dir: str | None,
        metadata: OperationMetadata,
    ) -> None:
        self.status, self.exit_code, self.finished_at = status, exit_code, finished_at
        self.stdout_excerpt, self.stderr_excerpt = stdout_excerpt, stderr_excerpt
        self.truncated = truncated
        self.stdout_bytes, self.stderr_bytes = stdout_bytes, stderr_bytes
        self.log_dir = log_dir
        self.metadata = metadata.copy()
