"""The stops other parts of Clipyard ask for: the realizer's archive saga (a workspace's
instances, waited for before the directory is removed) and ``clipyard up`` on Ctrl-C (all).

An archive stops what :func:`~runtime_supervisor.usecases.archive.archived_services` selects
and, when all stopped, removes the workspace's network namespace with the relays into it; it is
recorded as the workspace's teardown step when it stops any.

A stop-all drains the node first (nothing starts on it any more: 409 "the node is stopping"),
cancels the starts in flight (each stops what it spawned) and stops every live instance in
parallel, so it answers within the grace period plus the SIGKILL check; what survives SIGKILL is
logged with its pids.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from contracts.execution_commands import StopWorkspaceRuntimeServicesResult
from contracts.service import StopAllRuntimeServicesResult
from runtime_supervisor.adapters.containment.netns import NetnsError
from runtime_supervisor.adapters.outputs import finish_with_output
from runtime_supervisor.orchestration.stopping import Stopped, stop_many
from runtime_supervisor.usecases.archive import archived_services

if TYPE_CHECKING:
    from runtime_supervisor.domain import RuntimeTarget, ServiceRecord
    from runtime_supervisor.orchestration.context import Supervisor

__all__ = ["stop_everything", "stop_workspace"]

log = logging.getLogger(__name__)


async def _none() -> int:
    return 0


def _failed(stopped: list[Stopped]) -> list[str]:
    return [f"{s.record.service_name} ({s.record.id})" for s in stopped if s.survivors]


async def stop_workspace(
    sup: Supervisor, workspace_id: str, scope: str | None, reason: str = "workspace archived"
) -> StopWorkspaceRuntimeServicesResult:
    """Stop what the archive of ``workspace_id`` stops (see the module's docstring); a drain
    moving the workspace stops the same, for its own ``reason``."""
    records, target = await sup.store(archived_services, sup.app, workspace_id, scope)
    op = await _begin(sup, target, records)
    stopped = await stop_many(sup, records, reason=reason)
    failed = _failed(stopped)
    if not failed and sup.launcher is not None:  # its network namespace goes too
        try:
            await asyncio.to_thread(sup.launcher.drop_namespace, workspace_id)
        except NetnsError as exc:
            log.error("the namespace of workspace %s stays: %s", workspace_id, exc)
    if op is not None:
        lines = "".join(
            f"stopped {s.record.service_name} (pid {s.record.pid})\n"
            for s in stopped
            if not s.survivors
        )
        await finish_with_output(
            sup.app,
            sup.store,
            sup.settings.home,
            op,
            status="failed" if failed else "succeeded",
            exit_code=None if failed else 0,
            stdout=lines.encode(),
            stderr="".join(f"still running: {f}\n" for f in failed).encode(),
        )
    commands = [  # the workspace's own (a project workspace's, running inside it, are not)
        s.record.workspace_command_id
        for s in stopped
        if not s.survivors
        and not s.kept
        and s.record.workspace_command_id
        and s.record.execution_workspace_id == workspace_id
    ]
    return StopWorkspaceRuntimeServicesResult(
        workspace_id=workspace_id,
        stopped=len(stopped) - len(failed),
        failed=failed,
        stopped_commands=list(dict.fromkeys(commands)),
    )


async def _begin(
    sup: Supervisor, target: RuntimeTarget | None, records: list[ServiceRecord]
) -> str | None:
    """The archive's stop, recorded as the workspace's teardown step (when it stops any)."""
    if target is None or not records:
        return None
    names = ", ".join(r.service_name for r in records)
    op: str = await sup.store(
        sup.app.start_operation,
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


async def stop_everything(sup: Supervisor, node: str) -> StopAllRuntimeServicesResult:
    """Drain the node and stop every live instance and adapter, then the stack's relays,
    namespaces and units (see the module's docstring)."""
    sup.draining = True  # first: from now on every start is refused
    for start in list(sup.starts):
        start.cancel()  # a start waiting for readiness is cancelled, not awaited
    adapters = asyncio.ensure_future(sup.slots.kill_all() if sup.slots else _none())
    records: list[ServiceRecord] = await sup.store(sup.app.live_services)
    stopped = await stop_many(sup, records, reason="stop all")
    seen = {s.record.id for s in stopped}
    # A cancelled start may have recorded its instance after the first look.
    late = [r for r in await sup.store(sup.app.live_services) if r.id not in seen]
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
        node=node,
        services_stopped=len(stopped) - len(_failed(stopped)),
        slots_stopped=await adapters,
    )
