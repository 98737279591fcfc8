"""Progress of the supervisor's long operations: a job or a runtime provision command that
begins or ends is reported as ``operation.progressed.v1`` on the operation it is part of, naming
its workspace and its workspace operation, so a page showing that workspace learns at once that
there is output to follow (docs/design/runtime-supervisor.md, "Progress")."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from servicekit.operations import ProgressFields, report_progress

if TYPE_CHECKING:
    from runtime_supervisor.domain import RuntimeTarget
    from runtime_supervisor.orchestration.context import Supervisor

__all__ = ["report_step"]

log = logging.getLogger(__name__)


async def report_step(
    sup: Supervisor,
    operation_id: str | None,
    target: RuntimeTarget,
    workspace_operation_id: str,
    message: str,
    *,
    percent: int | None = None,
) -> None:
    """Report that the step ``workspace_operation_id`` of ``target`` began or ended (nothing
    without a long operation; best effort: a report that cannot be stored is logged)."""
    if operation_id is None:
        return
    progress: ProgressFields = {
        "phase": "workspace_provision",
        "message": message,
        "percent": percent,
        "workspace_operation_id": workspace_operation_id,
        "execution_workspace_id": target.execution_workspace_id,
        "project_workspace_id": target.project_workspace_id,
    }
    try:
        await sup.store(report_progress, sup.app, operation_id, progress)
    except Exception as error:  # progress is shown, never needed: the step goes on
        log.warning("progress of operation %s not recorded: %s", operation_id, error)
