"""What a workspace's archive stops (reference §6.3): the live instances started for the
workspace and, when the workspace owns its directory (an isolated worktree: its cwd is not its
project workspace's checkout), every live instance whose cwd lies inside it; a shared workspace's
archive stops only the instances started for it. An instance that a run of another workspace
holds is never stopped by an archive. The workspace's runtime-control lease is released (an
archive forces it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime_supervisor.domain import NotFoundError, RuntimeTarget, ServiceRecord
from runtime_supervisor.domain.directories import inside, owns_directory
from runtime_supervisor.usecases.lookups import visible

if TYPE_CHECKING:
    from runtime_supervisor.application import RuntimeSupervisorApplication

__all__ = ["archived_services"]


def archived_services(
    app: RuntimeSupervisorApplication, workspace_id: str, scope: str | None
) -> tuple[list[ServiceRecord], RuntimeTarget | None]:
    """On the store's thread: the live instances the archive of ``workspace_id`` stops, and
    the workspace (None when unknown); another company's workspace is not found (404)."""
    workspace = app.copy_of("workspace", workspace_id)
    if workspace is not None and not visible(workspace.company_id, scope):
        raise NotFoundError(
            f"There is no execution workspace {workspace_id}.", workspaceId=workspace_id
        )
    target = app.target(None, workspace_id=workspace_id) if workspace is not None else None
    own_dir = target.cwd if target is not None and owns_directory(target) else None
    if target is not None:
        app.release_control_lease(target)

    def held_elsewhere(record: ServiceRecord) -> bool:
        for run_id in record.lease_run_ids:
            run = app.copy_of("run", run_id)
            ws = run.get("workspace_id") if run is not None else None
            if ws is not None and ws != workspace_id:
                return True
        return False

    records = [
        r
        for r in app.live_services()
        if (r.execution_workspace_id == workspace_id or (own_dir and inside(r.cwd, own_dir)))
        and not held_elsewhere(r)
    ]
    return records, target
