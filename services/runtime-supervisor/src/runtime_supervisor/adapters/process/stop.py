"""Stopping a service's whole process group: SIGTERM, a grace period, SIGKILL, then a check that
nothing of the group survives (DECISIONS 8).

SIGTERM goes once to every process of the group (and of the session it leads) as it is when the
stop begins, except the leader while it has company: the leader is the service's wrapper, which
forwards a SIGTERM it receives to the command, so a group-wide SIGTERM would reach the command
twice (and some servers, uvicorn for one, take a second SIGTERM as "exit now, skip the graceful
shutdown"). The wrapper records the command's status and ends by itself once the command ends.
Nor does it go to a sandbox's ``bwrap`` processes: ``bwrap`` dies of a SIGTERM and takes its
sandbox down with SIGKILL (``--die-with-parent``); the contained command gets its SIGTERM
directly, as a member of the group, and ``bwrap`` ends once it has.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Literal

from runtime_supervisor.adapters.process.inspect import (
    ProcStat,
    group_members,
    member_stats,
    proc_stat,
)
from runtime_supervisor.adapters.process.watch import wait_exit

__all__ = ["StopOutcome", "stop_group"]

_POLL_FIRST = 0.02
_POLL_MAX = 0.25
_WATCHED = 16
"""At most this many pidfds are open at once for one stop (a group may hold hundreds)."""
_KILL_WAIT = 5.0
"""How long SIGKILLed processes may take to disappear (exit teardown, D state)."""


@dataclass(frozen=True, kw_only=True)
class StopOutcome:
    """How a stop went.

    ``terminated``: the group ended within the grace period after SIGTERM; ``killed``: it needed
    SIGKILL; ``already_gone``: nothing of it was running. ``survivors`` lists the pids still
    running after SIGKILL (empty unless something could not be killed).
    """

    outcome: Literal["terminated", "killed", "already_gone"]
    survivors: list[int] = field(default_factory=list)


def _kill(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _terminate(pgid: int, stats: list[ProcStat], signalled: set[int]) -> None:
    """SIGTERM, once, to each member of ``stats`` (the group as just read) not in ``signalled``
    (which it then holds); to the leader only when it is alone."""
    members = [stat for stat in stats if stat.name != "bwrap"] or stats
    others = [stat.pid for stat in members if stat.pid != pgid]
    for pid in others or [stat.pid for stat in members]:
        if pid not in signalled:
            signalled.add(pid)
            _kill(pid, signal.SIGTERM)


def _kill_all(pgid: int) -> None:
    """SIGKILL the group, and any member that moved to another group of the session."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    for stat in member_stats(pgid):
        if stat.pgid != pgid:
            _kill(stat.pid, signal.SIGKILL)


async def _gone_within(pgid: int, seconds: float, signalled: set[int] | None = None) -> bool:
    """Whether the group ends within ``seconds``. With ``signalled`` (the pids SIGTERM reached),
    a member that appeared since (a shell forked it just as the group was read) gets its
    SIGTERM too, once, rather than waiting for the SIGKILL at the end of the grace period."""
    deadline = time.monotonic() + seconds
    # The leader (the wrapper) ends once the command has: wait for that without polling (a
    # pidfd wakes us as it ends), then look at the rest of the group.
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(wait_exit(pgid, poll=_POLL_FIRST), timeout=seconds)
    # The sandbox's processes may end a few ms after the leader: wake as one of those still
    # there ends (a pidfd each), and look at the group again; at the latest after ``poll``.
    poll = _POLL_FIRST
    while stats := member_stats(pgid):
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if signalled is not None:
            _terminate(pgid, stats, signalled)
        await _first_exit([stat.pid for stat in stats], min(poll, left))
        poll = min(poll * 1.5, _POLL_MAX)
    return True


async def _first_exit(pids: list[int], timeout: float) -> None:
    """Return once one of ``pids`` (the first :data:`_WATCHED`) has ended, or after
    ``timeout`` seconds."""
    waits = [asyncio.ensure_future(wait_exit(pid, poll=_POLL_FIRST)) for pid in pids[:_WATCHED]]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
        await asyncio.gather(*waits, return_exceptions=True)


def _foreign_leader(pgid: int, leader_start_time: int | None) -> bool:
    """True when pid ``pgid`` is alive but is not the recorded leader (a recycled pid)."""
    if leader_start_time is None:
        return False
    stat = proc_stat(pgid)
    return stat is not None and not stat.ended and stat.start_time != leader_start_time


async def stop_group(
    pgid: int, *, grace: float = 10.0, leader_start_time: int | None = None
) -> StopOutcome:
    """Stop every process of group ``pgid``: SIGTERM, up to ``grace`` seconds, then SIGKILL.

    Args:
        pgid: The group (the wrapper's pid, leader of the service's session).
        grace: Seconds the group gets to end after SIGTERM.
        leader_start_time: The wrapper's recorded start time: when pid ``pgid`` is alive with
            another start time, the pid was recycled and the group is not ours (``already_gone``).

    Returns:
        The outcome, with the pids that survived SIGKILL (if any).
    """
    stats = member_stats(pgid)  # one scan of /proc (3.5 ms with 70 processes) for both uses
    if not stats or _foreign_leader(pgid, leader_start_time):
        return StopOutcome(outcome="already_gone")
    signalled: set[int] = set()
    _terminate(pgid, stats, signalled)
    if await _gone_within(pgid, grace, signalled):
        return StopOutcome(outcome="terminated")
    _kill_all(pgid)
    await _gone_within(pgid, _KILL_WAIT)
    return StopOutcome(outcome="killed", survivors=group_members(pgid))
