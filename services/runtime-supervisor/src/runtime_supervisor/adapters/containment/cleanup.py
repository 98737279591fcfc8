"""Ending everything of one stack on this host (docs/design/isolation.md): its relays and gates, its
network namespaces and its resource units. ``clipyard down`` (a stop-all) does it for its own
stack, a supervisor's start for the stacks whose homes are gone (their id ranges reclaimed), and
the test kit for each test's home. Blocking: call from a thread."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from runtime_supervisor.adapters.containment import netns
from runtime_supervisor.adapters.containment.cgroups import Cgroups

__all__ = ["drop_stacks"]

_PROC: Final = Path("/proc")
_MARKS: Final = (
    b"runtime_supervisor.adapters.containment.relay",
    b"runtime_supervisor.adapters.containment.gate",
    # Relays and gates a supervisor started before they moved under ``adapters``.
    b"runtime_supervisor.containment.relay",
    b"runtime_supervisor.containment.gate",
)


def _relays_of(prefixes: tuple[bytes, ...]) -> list[int]:
    """The relays and gates of a namespace named with one of ``prefixes``."""
    found: list[int] = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes()
            if any(mark in argv for mark in _MARKS) and any(prefix in argv for prefix in prefixes):
                found.append(int(entry.name))
    return found


def drop_stacks(stacks: Sequence[str]) -> int:
    """Kill the relays of ``stacks``, end their units, remove their namespaces and groups;
    returns how many namespaces went."""
    if not stacks:
        return 0
    for pid in _relays_of(tuple(f"/run/netns/cy{stack}-".encode() for stack in stacks)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    dropped = 0
    for stack in stacks:
        groups = Cgroups.existing(stack)
        for name in groups.units():
            unit = groups.unit(name)
            unit.kill()
            unit.remove()
        groups.remove()
        if netns.NETNS_DIR.is_dir():
            for path in netns.NETNS_DIR.glob(f"cy{stack}-*"):
                with contextlib.suppress(netns.NetnsError):
                    netns.delete(path.name)
                    dropped += 1
    return dropped


def main(argv: list[str]) -> int:
    """``python -m runtime_supervisor.adapters.containment.cleanup HOME``: end the stack of ``HOME``
    (the test kit's teardown)."""
    marker = Path(argv[0]) / "id-range"
    try:
        stack = marker.read_text(encoding="ascii").strip()
    except OSError:
        return 0
    if stack.isdigit():
        drop_stacks([stack])
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
