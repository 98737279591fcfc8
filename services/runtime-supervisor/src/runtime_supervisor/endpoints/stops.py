"""Endpoints of the stops other parts of Clipyard ask for: the realizer's archive saga
(``StopWorkspaceRuntimeServices``, waited for before the directory is removed) and
``clipyard up`` on Ctrl-C (``StopAllRuntimeServices``)."""

from __future__ import annotations

import os.path
from typing import TYPE_CHECKING

from contracts import subjects
from contracts.execution_commands import (
    StopWorkspaceRuntimeServices,
    StopWorkspaceRuntimeServicesResult,
)
from contracts.service import StopAllRuntimeServices, StopAllRuntimeServicesResult
from contracts.workspace_subjects import stop_workspace_runtime_services
from runtime_supervisor.control import principal_scope
from runtime_supervisor.domain import NotFoundError, RuntimeTarget, ServiceRecord
from runtime_supervisor.outputs import finish_with_output
from runtime_supervisor.stopping import Stopped, stop_many
from runtime_supervisor.usecases.lookups import visible

if TYPE_CHECKING:
    from natsbus import RequestContext
    from runtime_supervisor.endpoints.common import Endpoints

__all__ = ["inside", "register_stops"]


def inside(path: str | None, root: str) -> bool:
    """Whether ``path`` is ``root`` or lies below it (lexically)."""
    if not path:
        return False
    path, root = os.path.normpath(path), os.path.normpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _failed(stopped: list[Stopped]) -> list[str]:
    return [f"{s.record.service_name} ({s.record.id})" for s in stopped if s.survivors]


async def register_stops(e: Endpoints) -> None:
    """Add the stop-workspace and stop-all endpoints."""
    sup, app = e.sup, e.app

    def of_workspace(
        c: StopWorkspaceRuntimeServices,
    ) -> tuple[list[ServiceRecord], RuntimeTarget | None]:
        """On the store's thread: the live instances of the workspace and of every target whose
        directory lies inside it (reference §6.3), and the workspace (None when unknown); its
        runtime-control lease is released (an archive forces it)."""
        workspace = app.copy_of("workspace", c.workspace_id)
        if workspace is not None and not visible(workspace.company_id,
                                                 principal_scope(c.principal)):  # fmt: skip
            raise NotFoundError(f"There is no execution workspace {c.workspace_id}.",
                                workspaceId=c.workspace_id)  # fmt: skip
        target = app.target(None, workspace_id=c.workspace_id) if workspace is not None else None
        cwd = target.cwd if target is not None else None
        if target is not None:
            app.release_control_lease(target)
        records = [
            r for r in app.live_services()
            if r.execution_workspace_id == c.workspace_id or (cwd and inside(r.cwd, cwd))
        ]  # fmt: skip
        return records, target

    async def stop_workspace(
        c: StopWorkspaceRuntimeServices, ctx: RequestContext
    ) -> StopWorkspaceRuntimeServicesResult:
        with e.acting(c.principal, "workspace archived"):
            records, target = await sup.store(of_workspace, c)
            op = await _begin(target, records)
            stopped = await stop_many(sup, records, reason="workspace archived")
            failed = _failed(stopped)
            if op is not None:
                lines = "".join(f"stopped {s.record.service_name} (pid {s.record.pid})\n"
                                for s in stopped if not s.survivors)  # fmt: skip
                await finish_with_output(
                    app, sup.store, sup.settings.home, op, status="failed" if failed else "succeeded",
                    exit_code=None if failed else 0, stdout=lines.encode(),
                    stderr="".join(f"still running: {f}\n" for f in failed).encode(),
                )  # fmt: skip
        return StopWorkspaceRuntimeServicesResult(
            workspace_id=c.workspace_id, stopped=len(stopped) - len(failed), failed=failed
        )

    async def _begin(target: RuntimeTarget | None, records: list[ServiceRecord]) -> str | None:
        """The archive's stop, recorded as the workspace's teardown step (when it stops any)."""
        if target is None or not records:
            return None
        names = ", ".join(r.service_name for r in records)
        op: str = await sup.store(
            app.start_operation, target, phase="workspace_teardown",
            command=f"stop runtime services: {names}", cwd=target.cwd or "",
            metadata={"action": "stop", "reason": "workspace archived",
                      "runtimeServiceIds": [r.id for r in records]},
        )  # fmt: skip
        return op

    async def stop_all(
        c: StopAllRuntimeServices, ctx: RequestContext
    ) -> StopAllRuntimeServicesResult:
        with e.acting(c.principal, "stop all"):
            records: list[ServiceRecord] = await sup.store(app.live_services)
            stopped = await stop_many(sup, records, reason="stop all")
        return StopAllRuntimeServicesResult(
            node=e.node, services_stopped=len(stopped) - len(_failed(stopped)), slots_stopped=0
        )

    await e.add("stop_workspace", stop_workspace_runtime_services(e.node), stop_workspace,
                StopWorkspaceRuntimeServices)  # fmt: skip
    await e.add("stop_all", subjects.command("runtime_service", "stop_all", e.node), stop_all,
                StopAllRuntimeServices)  # fmt: skip
