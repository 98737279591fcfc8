"""Use cases of the supervisor's workspace operations: one begins ``running`` and is finished
with its outcome (``outputs.py`` writes the full output files first, off the store thread)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from eventstore import current_cause
from runtime_supervisor.domain import SupervisorOperation
from runtime_supervisor.usecases.queries import Queries
from runtime_supervisor.usecases.views import operation_detail

if TYPE_CHECKING:
    from contracts.execution_views import WorkspaceOperationDetail
    from runtime_supervisor.domain import RuntimeTarget
    from runtime_supervisor.domain.operations import OperationMetadata

__all__ = ["OperationUseCases"]


class OperationUseCases(Queries):
    """Record the supervisor's host steps against workspaces."""

    def start_operation(
        self,
        target: RuntimeTarget,
        *,
        phase: str,
        command: str,
        cwd: str,
        issue_id: str | None = None,
        operation_id: str | None = None,
        run_id: str | None = None,
        metadata: OperationMetadata | None = None,
        operation_ref: str | None = None,
    ) -> str:
        """Record a step that begins now, ``running``; return its id.

        Args:
            target: The workspace it acts on.
            phase: ``workspace_provision`` (start, restart, job, runtime provisioning),
                ``workspace_teardown`` (stop), ...
            command: What runs (never its environment).
            cwd: Where.
            issue_id: The issue concerned.
            operation_id: The long operation it belongs to.
            run_id: The heartbeat run it is done for (default: the acting cause's run).
            metadata: Plain data shown with it (``workspaceCommandKind``, ...).
            operation_ref: Its id when chosen beforehand (a UUID).
        """
        cause = current_cause()
        operation = SupervisorOperation(
            operation_ref=operation_ref or str(uuid.uuid4()),
            company_id=target.company_id,
            target_key=target.key,
            execution_workspace_id=target.execution_workspace_id,
            project_workspace_id=target.project_workspace_id,
            issue_id=issue_id,
            operation_id=operation_id,
            heartbeat_run_id=run_id if run_id is not None else (cause.run_id if cause else None),
            phase=phase,
            command=command,
            cwd=cwd,
            started_at=self.now(),
            metadata=metadata.copy() if metadata is not None else {},
            node_id=self.node_id,
        )
        self.save(operation)
        return str(operation.id)

    def finish_operation(
        self,
        operation_ref: str,
        *,
        status: str,
        exit_code: int | None = None,
        stdout: bytes = b"",
        stderr: bytes = b"",
        truncated: bool = False,
        log_dir: str | None = None,
        metadata: OperationMetadata | None = None,
    ) -> WorkspaceOperationDetail:
        """Record how a step ended (``succeeded``, ``failed`` or ``skipped``) with the last 64 KiB
        of each stream; ``truncated`` when the capture was capped."""
        self.operation(None, operation_ref)
        operation: SupervisorOperation = self.load(operation_ref)
        operation.finish(
            status=status,
            exit_code=exit_code,
            finished_at=self.now(),
            stdout=stdout,
            stderr=stderr,
            truncated=truncated,
            log_dir=log_dir,
            metadata=metadata.copy() if metadata is not None else None,
        )
        self.save(operation)
        return operation_detail(self.operations[operation_ref])
