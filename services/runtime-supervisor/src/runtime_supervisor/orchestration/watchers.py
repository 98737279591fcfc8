"""Watching live service instances and recording how they ended (DECISIONS 8).

A watcher waits for the instance's command to end (its own child or an adopted process), then for
its wrapper, which writes the exit status; an end by itself is ``stopped`` (status 0 or SIGTERM)
or ``failed`` (anything else, SIGKILL from outside included) with the status and the last
output, whatever is left of its process group is stopped, and its port is released. An end that a
stop of ours caused is left to that stop to record (``Supervisor.stopping``).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from runtime_supervisor.adapters.containment.relays import stop_service_relay
from runtime_supervisor.adapters.containment.workspaces import end_unit, service_unit
from runtime_supervisor.adapters.process import (
    group_members,
    last_output,
    proc_start_time,
    read_status,
    stop_group,
    wait_exit,
)
from runtime_supervisor.orchestration.context import as_system

if TYPE_CHECKING:
    from runtime_supervisor.domain import ServiceRecord
    from runtime_supervisor.orchestration.context import Supervisor

__all__ = ["forget", "log_path", "record_end", "stop_residue", "watch"]

_WRAPPER_WAIT = 5.0
"""Seconds the wrapper may take to write the status once the command ended."""
_RESIDUE_GRACE = 2.0


def log_path(record: ServiceRecord) -> Path | None:
    """The instance's log file (its command's stdout and stderr)."""
    return Path(record.run_dir) / "output.log" if record.run_dir else None


def _group_is_ours(record: ServiceRecord) -> bool:
    """Whether group ``record.pgid`` still belongs to this instance: its leader (the wrapper) is
    gone, or has the start time recorded at spawn (else, when none was recorded, started no
    later than the command did: a pid reused since starts later). While any process is in a
    group the kernel does not hand its number out again."""
    if record.pgid is None:
        return False
    leader = proc_start_time(record.pgid)
    if leader is None:
        return True
    if record.wrapper_start_time is not None:
        return leader == record.wrapper_start_time
    started = record.process_start_time
    return started is None or leader <= started


async def stop_residue(sup: Supervisor, record: ServiceRecord) -> None:
    """Stop whatever of the instance's process group outlived its command (DECISIONS 8)."""
    if record.pgid is not None and group_members(record.pgid) and _group_is_ours(record):
        await stop_group(record.pgid, grace=min(sup.settings.stop_grace, _RESIDUE_GRACE))


async def record_end(
    sup: Supervisor, record: ServiceRecord, *, stop_reason: str, what: str
) -> ServiceRecord:
    """Record how an instance's command ended, from the status its wrapper wrote.

    Args:
        sup: The supervisor.
        record: The instance (live as recorded).
        stop_reason: The reason of a clean end (``exited``, ``ended while no supervisor
            watched``).
        what: The start of the error of an unclean one (``service process exited``).

    Returns:
        The instance as recorded now (``stopped`` or ``failed``).
    """
    status = read_status(Path(record.run_dir)) if record.run_dir else None
    await stop_residue(sup, record)
    path = log_path(record)
    output = last_output(path) if path is not None else None
    app = sup.app
    code, signal = (status.code, status.signal) if status else (None, None)
    if status is not None and status.clean:
        ended: ServiceRecord = await sup.store(
            app.mark_stopped,
            record.id,
            stop_reason=stop_reason,
            exit_code=code,
            exit_signal=signal,
            last_output=output,
        )
    else:
        error = f"{what} ({status})" if status else f"{what}; its wrapper recorded no exit status"
        ended = await sup.store(
            app.mark_failed,
            record.id,
            error=error,
            exit_code=code,
            exit_signal=signal,
            last_output=output,
        )
    forget(sup, record)
    return ended


def forget(sup: Supervisor, record: ServiceRecord) -> None:
    """The instance ended: drop its port claim and idle timer, and end its resource unit (what
    escaped its process group dies there)."""
    if record.port is not None:
        sup.allocator.release(record.port)
    sup.cancel_idle_timer(record.id)
    sup.spawn(end_unit(sup, service_unit(record.id)), name=f"unit-end-{record.id}")
    if record.run_dir:
        sup.spawn(
            asyncio.to_thread(stop_service_relay, Path(record.run_dir)),
            name=f"relay-end-{record.id}",
        )


async def _command_end(record: ServiceRecord) -> None:
    if record.pid is not None:
        await wait_exit(record.pid, start_time=record.process_start_time)
    if record.pgid is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wait_exit(record.pgid), _WRAPPER_WAIT)


async def _watch(sup: Supervisor, record: ServiceRecord) -> None:
    await _command_end(record)
    if record.id in sup.stopping:
        return
    with as_system("the service's process ended"):
        await record_end(sup, record, stop_reason="exited", what="service process exited")


def watch(sup: Supervisor, record: ServiceRecord) -> None:
    """Watch a live instance until it ends (once per instance)."""
    if record.id in sup.watched or record.pid is None:
        return
    task = sup.spawn(_watch(sup, record), name=f"watch-{record.id}")
    sup.watched[record.id] = task

    def unwatch(done: asyncio.Task[None]) -> None:
        if sup.watched.get(record.id) is done:
            del sup.watched[record.id]

    task.add_done_callback(unwatch)
