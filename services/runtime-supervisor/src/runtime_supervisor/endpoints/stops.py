"""Endpoints of the stops other parts of Clipyard ask for: the realizer's archive saga
(``StopWorkspaceRuntimeServices``, waited for before the directory is removed) and
``clipyard up`` on Ctrl-C (``StopAllRuntimeServices``).

An archive stops the live instances (and, when all stopped, removes the workspace's network
namespace with the relays into it) started for the workspace and, when the workspace owns its
directory (an isolated worktree: its cwd is not its project workspace's checkout), every live
instance whose cwd lies inside it; a shared workspace's archive stops only the instances started
for it. An instance that a run of another workspace holds is never stopped by an archive.

A stop-all drains the node first (nothing starts on it any more: 409 "the node is stopping"),
cancels the starts in flight (each stops what it spawned) and stops every live instance in
parallel, so it answers within the grace period plus the SIGKILL check; what survives SIGKILL is
logged with its pids.
"""

from __future__ import annotations

import asyncio
import logging
import os.path
from typing import TYPE_CHECKING

from contracts import subjects
from contracts.execution_commands import (
    StopWorkspaceRuntimeServices,
    StopWorkspaceRuntimeServicesResult,
)
from contracts.service import StopAllRuntimeServices, StopAllRuntimeServicesResult
from contracts.workspace_subjects import stop_workspace_runtime_services
from runtime_supervisor.containment.netns import NetnsError
from runtime_supervisor.domain import NotFoundError, RuntimeTarget, ServiceRecord
from runtime_supervisor.outputs import finish_with_output
from runtime_supervisor.stopping import Stopped, stop_many
from runtime_supervisor.usecases.lookups import visible
from servicekit.access import Access

if TYPE_CHECKING:
    from natsbus import RequestContext
    from runtime_supervisor.endpoints.common import Endpoints

__all__ = ["inside", "owns_directory", "register_stops"]

log = logging.getLogger(__name__)


def inside(path: str | None, root: str) -> bool:
    """Whether ``path`` is ``root`` or lies below it (lexically)."""
    if not path:
        return False
    path, root = os.path.normpath(path), os.path.normpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def owns_directory(target: RuntimeTarget) -> bool:
    """Whether the target's directory is its own (an isolated worktree), not the project
    workspace's checkout it shares with others."""
    if not target.cwd or target.mode == "shared_workspace":
        return False
    checkout = target.project_workspace_cwd
    return checkout is None or os.path.normpath(checkout) != os.path.normpath(target.cwd)


async def _none() -> int:
    return 0


def _failed(stopped: list[Stopped]) -> list[str]:
    return [f"{s.record.service_name} ({s.record.id})" for s in stopped if s.survivors]


async def register_stops(e: Endpoints) -> None:
    """Add the stop-workspace and stop-all endpoints."""
    sup, app = e.sup, e.app

    def of_workspace(
        c: StopWorkspaceRuntimeServices,
    ) -> tuple[list[ServiceRecord], RuntimeTarget | None]:
        """On the store's thread: the live instances the archive stops (see the module's
        docstring; reference §6.3), and the workspace (None when unknown); its runtime-control
        lease is released (an archive forces it)."""
        workspace = app.copy_of("workspace", c.workspace_id)
        scope = Access.of(c.principal).scope()
        if workspace is not None and not visible(workspace.company_id, scope):
            raise NotFoundError(
                f"There is no execution workspace {c.workspace_id}.", workspaceId=c.workspace_id
            )
        target = app.target(None, workspace_id=c.workspace_id) if workspace is not None else None
        own_dir = target.cwd if target is not None and owns_directory(target) else None
        if target is not None:
            app.release_control_lease(target)

        def held_elsewhere(record: ServiceRecord) -> bool:
            for run_id in record.lease_run_ids:
                run = app.copy_of("run", run_id)
                ws = run.get("workspace_id") if run is not None else None
                if ws is not None and ws != c.workspace_id:
                    return True
            return False

        records = [
            r
            for r in app.live_services()
            if (r.execution_workspace_id == c.workspace_id or (own_dir and inside(r.cwd, own_dir)))
            and not held_elsewhere(r)
        ]
        return records, target

    async def stop_workspace(
        c: StopWorkspaceRuntimeServices, ctx: RequestContext
    ) -> StopWorkspaceRuntimeServicesResult:
        with e.acting(c.principal, "workspace archived"):
            records, target = await sup.store(of_workspace, c)
            op = await _begin(target, records)
            stopped = await stop_many(sup, records, reason="workspace archived")
            failed = _failed(stopped)
            if not failed and sup.launcher is not None:  # its network namespace goes too
                try:
                    await asyncio.to_thread(sup.launcher.drop_namespace, c.workspace_id)
                except NetnsError as exc:
                    log.error("the namespace of workspace %s stays: %s", c.workspace_id, exc)
            if op is not None:
                lines = "".join(
                    f"stopped {s.record.service_name} (pid {s.record.pid})\n"
                    for s in stopped
                    if not s.survivors
                )
                await finish_with_output(
                    app,
                    sup.store,
                    sup.settings.home,
                    op,
                    status="failed" if failed else "succeeded",
                    exit_code=None if failed else 0,
                    stdout=lines.encode(),
                    stderr="".join(f"still running: {f}\n" for f in failed).encode(),
                )
        return StopWorkspaceRuntimeServicesResult(
            workspace_id=c.workspace_id, stopped=len(stopped) - len(failed), failed=failed
        )

    async def _begin(target: RuntimeTarget | None, records: list[ServiceRecord]) -> str | None:
        """The archive's stop, recorded as the workspace's teardown step (when it stops any)."""
        if target is None or not records:
            return None
        names = ", ".join(r.service_name for r in records)
        op: str = await sup.store(
            app.start_operation,
            target,
            phase="workspace_teardown",
            command=f"stop runtime services: {names}",
            cwd=target.cwd or "",
            metadata={
                "action": "stop",
                "reason": "workspace archived",
                "runtimeServiceIds": [r.id for r in records],
            },
        )
        return op

    async def stop_all(
        c: StopAllRuntimeServices, ctx: RequestContext
    ) -> StopAllRuntimeServicesResult:
        sup.draining = True  # first: from now on every start is refused
        for start in list(sup.starts):
            start.cancel()  # a start waiting for readiness is cancelled, not awaited
        with e.acting(c.principal, "stop all"):
            adapters = asyncio.ensure_future(sup.slots.kill_all() if sup.slots else _none())
            records: list[ServiceRecord] = await sup.store(app.live_services)
            stopped = await stop_many(sup, records, reason="stop all")
            seen = {s.record.id for s in stopped}
            # A cancelled start may have recorded its instance after the first look.
            late = [r for r in await sup.store(app.live_services) if r.id not in seen]
            stopped += await stop_many(sup, late, reason="stop all")
            await adapters  # then the stack's relays, namespaces and units go too
            if sup.launcher is not None and not _failed(stopped):
                await asyncio.to_thread(sup.launcher.drop_all)
        for s in stopped:
            if s.survivors:
                log.error(
                    "stop-all: runtime service %s (%s) still runs after SIGKILL: pids %s",
                    s.record.service_name,
                    s.record.id,
                    ", ".join(map(str, s.survivors)),
                )
        return StopAllRuntimeServicesResult(
            node=e.node,
            services_stopped=len(stopped) - len(_failed(stopped)),
            slots_stopped=await adapters,
        )

    await e.add(
        "stop_workspace",
        stop_workspace_runtime_services(e.node),
        stop_workspace,
        StopWorkspaceRuntimeServices,
    )
    await e.add(
        "stop_all",
        subjects.command("runtime_service", "stop_all", e.node),
        stop_all,
        StopAllRuntimeServices,
    )
