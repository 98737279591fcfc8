"""Runtime services left running when no supervisor can stop them (``clipyard up`` on Ctrl-C).

Services outlive their supervisor by design (DECISIONS 7); ``clipyard up`` promises that Ctrl-C
leaves nothing. Normally the supervisor stops them (``stop_all``); when it is dead, did not answer,
or left survivors, this sweep finds every service wrapper of this home — a process whose command
line is ``/bin/sh <...>/wrapper.sh <home>/runtime/<serviceId> <command>`` and that leads its own
process group — and stops each group: SIGTERM, a grace period, then SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

__all__ = ["group_alive", "service_groups", "stop_leftover_services"]


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def service_groups(home: Path) -> list[int]:
    """The process groups of the runtime services started under ``home`` that still run."""
    runtime = f"{Path(home).resolve()}/runtime/"
    groups = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        args = _cmdline(pid)
        if len(args) < 3 or not args[1].endswith("wrapper.sh") or not args[2].startswith(runtime):
            continue
        with contextlib.suppress(ProcessLookupError):
            if os.getpgid(pid) == pid:
                groups.append(pid)
    return sorted(groups)


def group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs (zombies, which no init may reap, do not)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


def stop_leftover_services(home: Path, *, grace: float = 5.0) -> list[int]:
    """Stop every runtime service group of ``home``; returns the groups that were running.

    Args:
        home: ``$CLIPYARD_HOME``.
        grace: Seconds between SIGTERM and SIGKILL.
    """
    groups = service_groups(home)
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(group_alive(g) for g in groups):
        time.sleep(0.05)
    for group in groups:
        if group_alive(group):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
    return groups
