"""Stopping runtime service instances (reference §6.3; DECISIONS 8): SIGTERM to the whole process
group, the grace period, SIGKILL, a check that nothing of the group survives, then ``stopped``
with the exit status the wrapper wrote and the port released. Starts and stops of one service
identity are serialized by :func:`lock_key`; an instance that already ended is left as is.

A stop only signals the group while it is still the instance's: the wrapper (its leader) must
still have the start time recorded at spawn, else the pid was recycled and nothing is signalled.
A command that had already ended by itself when the stop came (its status file exists) is
recorded as the watcher records such an end (``failed`` unless status 0 or SIGTERM), never as a
stop of ours. A stop decided because no run held the instance (``only_if_unleased``) checks
that again under the identity's lock, and leaves a leased instance running.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from runtime_supervisor.adapters.process import last_output, read_status, stop_group
from runtime_supervisor.domain import ServiceRecord
from runtime_supervisor.orchestration.watchers import forget, log_path, record_end

if TYPE_CHECKING:
    from runtime_supervisor.orchestration.context import Supervisor

__all__ = [
    "Stopped",
    "instance_lock_key",
    "lock_key",
    "stop_failed_start",
    "stop_instance",
    "stop_locked",
    "stop_many",
]

log = logging.getLogger(__name__)

_KILL_ROUNDS = 2
"""More SIGKILL rounds a failed start's group gets when something of it survived the first."""
_KILL_LATER, _KILL_PAUSE = 12, 5.0
"""Then a background task tries again every ``_KILL_PAUSE`` seconds, ``_KILL_LATER`` times."""


@dataclass(frozen=True, kw_only=True)
class Stopped:
    """A stopped instance; ``survivors`` are pids still running after SIGKILL (then it stays
    live as recorded). ``kept``: the stop was called off (a run holds it again)."""

    record: ServiceRecord
    survivors: list[int] = field(default_factory=list)
    kept: bool = False


def lock_key(
    target_key: str, command_id: str | None, scope_id: str | None, reuse: str | None
) -> str:
    """The key serializing starts and stops of one service identity."""
    return f"service:{reuse}" if reuse else f"service:{target_key}|{command_id}|{scope_id}"


def instance_lock_key(record: ServiceRecord) -> str:
    """The :func:`lock_key` of an instance's identity."""
    return lock_key(
        record.target_key, record.workspace_command_id, record.scope_id, record.reuse_key
    )


async def stop_instance(
    sup: Supervisor, record: ServiceRecord, *, reason: str, only_if_unleased: bool = False
) -> Stopped:
    """Stop one instance (serialized with starts of its identity); an ended one is left as is.

    Args:
        sup: The supervisor.
        record: The instance.
        reason: Its ``stopReason`` (``manual stop``, ``run finished``, ``idle timeout``, ...).
        only_if_unleased: Stop it only if no run holds it once the lock is held (a stop decided
            because none did: a run's release, an idle timer).
    """
    async with sup.locks.hold(instance_lock_key(record)):
        return await stop_locked(sup, record, reason=reason, only_if_unleased=only_if_unleased)


async def stop_locked(
    sup: Supervisor, record: ServiceRecord, *, reason: str, only_if_unleased: bool = False
) -> Stopped:
    """Stop one instance; the caller holds the lock of its identity (see :func:`stop_instance`)."""
    current: ServiceRecord = await sup.store(sup.app.service_record, None, record.id)
    if not current.live:
        return Stopped(record=current)
    if only_if_unleased and current.lease_run_ids:
        return Stopped(record=current, kept=True)
    sup.stopping.add(current.id)
    sup.cancel_idle_timer(current.id)
    try:
        run_dir = Path(current.run_dir) if current.run_dir else None
        if run_dir is not None and read_status(run_dir) is not None:
            # It ended by itself before this stop signalled anything: record that end.
            ended = await record_end(
                sup, current, stop_reason="exited", what="service process exited"
            )
            return Stopped(record=ended)
        if current.pgid is not None:
            outcome = await stop_group(
                current.pgid,
                grace=sup.settings.stop_grace,
                leader_start_time=current.wrapper_start_time,
            )
            if outcome.survivors:
                log.error(
                    "processes of runtime service %s (%s) survived SIGKILL: %s",
                    current.service_name,
                    current.id,
                    outcome.survivors,
                )
                return Stopped(record=current, survivors=outcome.survivors)
        status = read_status(run_dir) if run_dir is not None else None
        path = log_path(current)
        ended = await sup.store(
            sup.app.mark_stopped,
            current.id,
            stop_reason=reason,
            exit_code=status.code if status else None,
            exit_signal=status.signal if status else None,
            last_output=last_output(path) if path is not None else None,
        )
    finally:
        sup.stopping.discard(current.id)
    forget(sup, ended)
    return Stopped(record=ended)


async def stop_many(sup: Supervisor, records: list[ServiceRecord], *, reason: str) -> list[Stopped]:
    """Stop instances in parallel."""
    return list(await asyncio.gather(*(stop_instance(sup, r, reason=reason) for r in records)))


async def stop_failed_start(
    sup: Supervisor, service_id: str, pgid: int, leader_start_time: int | None
) -> list[int]:
    """Stop the process group of a start that failed (or was cancelled).

    Args:
        sup: The supervisor.
        service_id: The instance (its watcher leaves the recording to the caller meanwhile).
        pgid: Its group (the wrapper's pid).
        leader_start_time: The wrapper's start time (a recycled pid is not signalled).

    Returns:
        The pids still running after a few more SIGKILL rounds (a background task then keeps
        trying; the caller names them in the start's error).
    """
    sup.stopping.add(service_id)
    try:
        outcome = await stop_group(
            pgid, grace=sup.settings.stop_grace, leader_start_time=leader_start_time
        )
        for _ in range(_KILL_ROUNDS):
            if not outcome.survivors:
                break
            outcome = await stop_group(pgid, grace=0, leader_start_time=leader_start_time)
    finally:
        sup.stopping.discard(service_id)
    if outcome.survivors:
        log.error("processes of a failed start survived SIGKILL: %s", outcome.survivors)
        sup.spawn(_keep_killing(pgid, leader_start_time), name=f"kill-{service_id}")
    return outcome.survivors


async def _keep_killing(pgid: int, leader_start_time: int | None) -> None:
    for _ in range(_KILL_LATER):
        await asyncio.sleep(_KILL_PAUSE)
        outcome = await stop_group(pgid, grace=0, leader_start_time=leader_start_time)
        if not outcome.survivors:
            log.info("the processes of group %d that survived SIGKILL are gone", pgid)
            return
    log.error("processes of group %d still survive SIGKILL; giving up", pgid)
