"""What a (re)started supervisor does with the instances its store says are live (DECISIONS 7).

Each one whose process is still there (pid, process start time and process group checked) is
adopted: ``running`` again, watched, never restarted. Each one whose process ended meanwhile is
recorded with the status its wrapper wrote (``stopped`` for 0 or SIGTERM, else ``failed``), and
what is left of its group is stopped. A ``starting`` one that was never recorded as spawned is
``failed`` (its wrapper, if it got that far, is stopped). Nothing is started. Finally the
instances no run holds any more are handled as a run's release would have handled them (the
inbox hears of a finished run after saving its releases, so a crash in between lost only that),
and every unleased ``idle_timeout`` one, whoever started it, gets its idle timer again (for
what is left of ``idleSeconds`` since it was last used): timers die with their supervisor.
Workspace operations and runtime provisionings the previous supervisor left ``running`` are
recorded ``failed``: nothing finishes them any more.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from runtime_supervisor.adapters.containment.relays import revive_service_relay
from runtime_supervisor.adapters.process import alive, stop_group
from runtime_supervisor.adapters.process.inspect import proc_stat
from runtime_supervisor.domain import NotFoundError
from runtime_supervisor.orchestration.context import as_system
from runtime_supervisor.orchestration.idle import unleased_policy
from runtime_supervisor.orchestration.runs import after_release
from runtime_supervisor.orchestration.watchers import forget, record_end, watch

if TYPE_CHECKING:
    from runtime_supervisor.application import RuntimeSupervisorApplication
    from runtime_supervisor.domain import ServiceRecord
    from runtime_supervisor.orchestration.context import Supervisor

__all__ = ["Adoption", "adopt_all", "fail_interrupted"]

log = logging.getLogger(__name__)
_GONE = "ended while no supervisor watched"
_CUT = "the supervisor stopped before this step ended"


@dataclass
class Adoption:
    """What an adoption pass found: instances adopted, and instances recorded as ended."""

    adopted: list[str] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)


def _is_alive(record: ServiceRecord) -> bool:
    if record.pid is None or record.pgid is None or record.process_start_time is None:
        return False
    return alive(record.pid, record.process_start_time, record.pgid)


def _boot_time() -> float:
    with Path("/proc/stat").open() as stat:
        for line in stat:
            if line.startswith("btime "):
                return float(line.split()[1])
    return 0.0


def _unrecorded_group(record: ServiceRecord) -> int | None:
    """The group of a wrapper spawned for a ``starting`` instance whose spawn was never
    recorded: named by its ``child.pid`` file, if that process started before the file was
    written (a later one reuses the pid)."""
    if not record.run_dir:
        return None
    path = Path(record.run_dir) / "child.pid"
    try:
        text, written = path.read_text().strip(), path.stat().st_mtime
    except OSError:
        return None
    stat = proc_stat(int(text)) if text.isdigit() else None
    if stat is None or stat.ended:
        return None
    started = _boot_time() + stat.start_time / os.sysconf("SC_CLK_TCK")
    return stat.pgid if started <= written + 1.0 else None


async def _never_spawned(sup: Supervisor, record: ServiceRecord) -> None:
    group = _unrecorded_group(record)
    if group is not None:
        await stop_group(group, grace=sup.settings.stop_grace)
    ended: ServiceRecord = await sup.store(
        sup.app.mark_start_failed,
        record.id,
        error=f'Failed to start runtime service "{record.service_name}": the supervisor '
        "stopped before its start was recorded",
    )
    forget(sup, ended)


async def adopt_all(sup: Supervisor) -> Adoption:
    """Adopt the live instances, record the ended ones (see the module's docstring)."""
    found = Adoption()
    records: list[ServiceRecord] = await sup.store(sup.app.live_services)
    with as_system("supervisor restarted"):
        await sup.store(fail_interrupted, sup.app)
        for record in records:
            if _is_alive(record):
                adopted: ServiceRecord = await sup.store(sup.app.mark_adopted, record.id)
                if adopted.live:
                    if adopted.run_dir:  # its preview URL keeps working (DECISIONS 7)
                        await asyncio.to_thread(revive_service_relay, Path(adopted.run_dir))
                    watch(sup, adopted)
                    found.adopted.append(record.id)
                    if not adopted.lease_run_ids and (
                        adopted.started_by_run_id or unleased_policy(adopted)[0] == "idle"
                    ):
                        after_release(sup, adopted, idle_from=adopted.last_used_at)
            elif record.pid is None:
                await _never_spawned(sup, record)
                found.ended.append(record.id)
            else:
                await record_end(sup, record, stop_reason=_GONE, what=_GONE)
                found.ended.append(record.id)
    if records:
        log.info("adopted %d runtime services; %d had ended", len(found.adopted), len(found.ended))
    if sup.launcher is not None and sup.launcher.available:
        # A gate that died with the host's other processes: its namespace's services reach
        # their allowlist again (nothing, until then).
        await asyncio.to_thread(sup.launcher.revive_gates)
    return found


def fail_interrupted(app: RuntimeSupervisorApplication) -> int:
    """On the store's thread, before any new work: fail this node's operations and
    provisionings left ``running`` (another node's are its own supervisor's); return how many
    operations were."""
    running = [
        key
        for key, op in app.operations.items()
        if op.status == "running" and app.is_mine(op.node_id)
    ]
    for key in running:
        app.finish_operation(key, status="failed", stderr=f"{_CUT}\n".encode())
    for runtime in list(app.runtimes.values()):
        provisioning = runtime.provisioning_record()
        if provisioning is None or provisioning.status != "running":
            continue
        workspace_id = runtime.execution_workspace_id
        project_workspace_id = None if workspace_id else runtime.project_workspace_id
        try:
            target = app.target(None, workspace_id, project_workspace_id)
        except NotFoundError:
            continue
        if not app.is_mine(target.node_id):
            continue
        app.provisioning_failed(target, operation_id=provisioning.operation_id, error=_CUT)
    return len(running)
