"""Ending everything of one stack on this host (docs/design/isolation.md): its relays, its
network namespaces and its resource units. ``clipyard down`` (a stop-all) does it for its own
stack, a supervisor's start for the stacks whose homes are gone (their id ranges reclaimed), and
the test kit for each test's home. Blocking: call from a thread."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Final

from runtime_supervisor.containment import netns
from runtime_supervisor.containment.cgroups import ROOT, Unit, own_paths

__all__ = ["drop_stack"]

_PROC: Final = Path("/proc")
_MARK: Final = b"runtime_supervisor.containment.relay"


def _relays_of(prefix: bytes) -> list[int]:
    found: list[int] = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes()
            if _MARK in argv and prefix in argv:
                found.append(int(entry.name))
    return found


def _parents(stack: str) -> list[tuple[str, Path]]:
    """The stack's folder in each v1 hierarchy, below this process's own groups."""
    try:
        own = own_paths(Path("/proc/self/cgroup").read_text())
    except OSError:
        return []
    found: list[tuple[str, Path]] = []
    for controller in ("memory", "pids", "freezer", "cpu"):
        if controller in own:
            parent = ROOT / controller / own[controller].lstrip("/") / f"clipyard-{stack}"
            if parent.is_dir():
                found.append((controller, parent))
    return found


def _units_of(stack: str) -> list[Unit]:
    units: dict[str, list[tuple[str, Path]]] = {}
    for controller, parent in _parents(stack):
        for child in parent.iterdir():
            if child.is_dir():
                units.setdefault(child.name, []).append((controller, child))
    return [Unit(tuple(groups), name) for name, groups in units.items()]


def drop_stack(stack: str) -> int:
    """Kill the relays of ``stack``, end its units, remove its namespaces and groups; returns
    how many namespaces went."""
    prefix = f"/run/netns/cy{stack}-".encode()
    for pid in _relays_of(prefix):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for unit in _units_of(stack):
        unit.kill()
        unit.remove()
    for _controller, parent in _parents(stack):
        with contextlib.suppress(OSError):
            parent.rmdir()
    dropped = 0
    if netns.NETNS_DIR.is_dir():
        for path in netns.NETNS_DIR.glob(f"cy{stack}-*"):
            with contextlib.suppress(netns.NetnsError):
                netns.delete(path.name)
                dropped += 1
    return dropped


def main(argv: list[str]) -> int:
    """``python -m runtime_supervisor.containment.cleanup HOME``: end the stack of ``HOME``
    (the test kit's teardown)."""
    marker = Path(argv[0]) / "id-range"
    try:
        stack = marker.read_text(encoding="ascii").strip()
    except OSError:
        return 0
    if stack.isdigit():
        drop_stack(stack)
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
