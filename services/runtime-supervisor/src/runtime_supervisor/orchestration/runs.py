"""Runs and their services (reference §6.6, §6.7): a run's services started or reused with a
lease for it, and what happens when a finished run's leases are released.

When no run holds an instance any more: an ``ephemeral`` one, or one whose stop policy is
``on_run_finish``, stops now; an ``idle_timeout`` one gets a timer (``idleSeconds``, default
1800, at least 1) that stops it unless a run leased it again meanwhile; a shared ``manual`` one
keeps running.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import TYPE_CHECKING

from contracts.runtime_commands import EnsureRunServices, RunServices
from runtime_supervisor.domain.config.effective import effective_commands
from runtime_supervisor.domain.desired import wanted_for_run
from runtime_supervisor.orchestration.context import as_system
from runtime_supervisor.orchestration.idle import arm_idle_timer, unleased_policy
from runtime_supervisor.orchestration.starting import Started, start_service
from runtime_supervisor.orchestration.stopping import stop_instance
from runtime_supervisor.usecases.views import service_brief

if TYPE_CHECKING:
    from contracts.execution_views import RuntimeServiceBrief
    from runtime_supervisor.domain import ServiceRecord
    from runtime_supervisor.inbox import RunFinishedHook
    from runtime_supervisor.orchestration.context import Supervisor
    from runtime_supervisor.usecases.services import Release

__all__ = ["after_release", "ensure_run_services", "run_finished_hook"]

log = logging.getLogger(__name__)


def after_release(
    sup: Supervisor, record: ServiceRecord, *, idle_from: datetime | None = None
) -> None:
    """Act on an instance no run holds any more (see the module's docstring).

    Args:
        sup: The supervisor.
        record: The instance after the release.
        idle_from: When it became idle (an adoption arms the timer for what is left of it);
            default now.
    """
    if not record.live or record.lease_run_ids:
        return
    action, _seconds = unleased_policy(record)
    if action == "stop":
        sup.spawn(_stop_released(sup, record), name=f"release-stop-{record.id}")
    elif action == "idle":
        arm_idle_timer(sup, record, idle_from=idle_from)


async def _stop_released(sup: Supervisor, record: ServiceRecord) -> None:
    # Decided because no run held it: a run that leased it again meanwhile keeps it running.
    with as_system("its run finished"):
        await stop_instance(sup, record, reason="run finished", only_if_unleased=True)


def run_finished_hook(sup: Supervisor, loop: asyncio.AbstractEventLoop) -> RunFinishedHook:
    """The inbox's ``on_run_finished``: called on the store's thread, it only hands the releases
    over to the event loop."""

    def hook(run_id: str, releases: list[Release]) -> None:
        async def act() -> None:
            await sup.adopted.wait()  # a service left running is adopted before it is stopped
            for record, no_leases_left in releases:
                if no_leases_left:
                    after_release(sup, record)

        def schedule() -> None:
            sup.spawn(act(), name=f"run-finished-{run_id}")

        loop.call_soon_threadsafe(schedule)

    return hook


async def ensure_run_services(
    sup: Supervisor, request: EnsureRunServices, operation_id: str | None = None
) -> RunServices:
    """Start or reuse every service of the workspace whose desired state is ``running``, each
    leased to the run (reference §6.6; never a ``manual`` or ``stopped`` one, DECISIONS 7).

    Raises:
        StartFailedError, ...: A start failed; the leases taken so far were released first.
        StateConflictError: The run has finished (no lease outlives its run), or the node is
            stopping.
        NotFoundError: The workspace, or the run, is another company's.
    """
    sup.check_accepting()
    app = sup.app
    target = await sup.store(app.target, request.principal.company_id, request.workspace_id)
    await sup.store(app.check_lease_run, target.company_id, request.run_id)
    effective = effective_commands(target.own_runtime, target.project_runtime)
    desired, states = await sup.store(app.desired, target)
    indexes = [s.service_index for s in effective.services if s.service_index is not None]
    wanted = set(wanted_for_run(indexes, desired, states))
    issue = await sup.store(app.issue, None, request.issue_id) if request.issue_id else None
    taken: list[Started] = []
    try:
        for command in effective.services:
            if command.service_index not in wanted or command.disabled_reason:
                continue
            taken.append(
                await start_service(
                    sup,
                    target,
                    command,
                    run_id=request.run_id,
                    agent_id=request.agent_id,
                    issue=issue,
                    lease=True,
                    operation_id=operation_id,
                )
            )
    except Exception:
        for started in taken:
            record, no_leases_left = await sup.store(
                app.release_lease, started.record.id, request.run_id
            )
            if no_leases_left:
                after_release(sup, record)
        raise

    def briefs_of() -> list[RuntimeServiceBrief]:
        records = [app.service_record(None, s.record.id) for s in taken]
        return [service_brief(r, app.desired_of(r)) for r in records]

    briefs = await sup.store(briefs_of)
    return RunServices(
        runtime_services=briefs,
        started=[s.record.id for s in taken if not s.reused],
        reused=[s.record.id for s in taken if s.reused],
    )
