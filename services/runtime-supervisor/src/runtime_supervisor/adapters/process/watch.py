"""Waiting for a process to end, whether it is the supervisor's child or one it adopted.

An adopted process (found running after a supervisor restart) is not our child: ``waitpid`` cannot
wait for it. A ``pidfd`` can (it becomes readable when the process ends, child or not); where
pidfds are missing, ``/proc`` is polled. Our own children are reaped by a small thread each
(:func:`reap_child`), so none lingers as a zombie whoever watches it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import threading

from runtime_supervisor.adapters.process.inspect import proc_stat

__all__ = ["reap_child", "wait_exit"]


def reap_child(proc: subprocess.Popen[bytes]) -> threading.Event:
    """Reap ``proc`` in a daemon thread as soon as it ends.

    Args:
        proc: A child started by the supervisor.

    Returns:
        An event set once the child has ended and been reaped (``proc.returncode`` is then set).
    """
    ended = threading.Event()

    def wait() -> None:
        with contextlib.suppress(ChildProcessError):
            proc.wait()
        ended.set()

    threading.Thread(target=wait, name=f"reap-{proc.pid}", daemon=True).start()
    return ended


def _ended(pid: int, start_time: int | None) -> bool:
    stat = proc_stat(pid)
    return stat is None or stat.ended or (start_time is not None and stat.start_time != start_time)


async def _poll(pid: int, start_time: int | None, poll: float) -> None:
    while True:
        if _ended(pid, start_time):
            return
        await asyncio.sleep(poll)


async def wait_exit(pid: int, *, poll: float = 0.5, start_time: int | None = None) -> None:
    """Return once process ``pid`` has ended (a zombie counts as ended).

    Args:
        pid: Any process the supervisor may signal: its child or an adopted one.
        poll: Seconds between looks at ``/proc`` when no pidfd can be opened.
        start_time: The recorded start time (clock ticks); when given, a pid now held by a
            process that started at another time counts as ended (the pid was recycled).
    """
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (AttributeError, OSError):  # no pidfds here (old kernel, seccomp): poll /proc
        await _poll(pid, start_time, poll)
        return
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not done.done():
            done.set_result(None)

    loop.add_reader(pidfd, readable)
    try:
        # The pid may have been recycled before the pidfd was opened, or the process may have
        # ended just before: then the pidfd names a process we are not waiting for.
        if _ended(pid, start_time):
            return
        await done
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)
