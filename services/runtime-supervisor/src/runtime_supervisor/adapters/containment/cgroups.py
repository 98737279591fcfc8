"""Resource groups of contained processes, by cgroup v1 (docs/design/isolation.md).

Each contained launch (a service, a job, an agent run) gets a *unit*: one group per controller
(``memory``, ``pids``, ``freezer``, and ``cpu`` when a CPU limit is asked), nested under the
supervisor's own group of that controller (never moving anything out of it), at
``<own>/clipyard-<stack>/<unit>``. The launched process joins its unit before it execs, so
everything it starts is in it, whatever session, process group or pid namespace it moves to.

A unit ends by freezer: freeze, SIGKILL every member, thaw, wait until it is empty, remove it
(v1 has no ``cgroup.kill``; a frozen group cannot fork its way out of the kill). Processes are
never found or ended by uid. Blocking: call from a thread, except :meth:`Unit.join` which runs in
the forked child.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["CgroupError", "Cgroups", "Limits", "Unit", "UnitUsage", "own_paths"]

ROOT: Final = Path("/sys/fs/cgroup")
REQUIRED: Final = ("memory", "pids", "freezer")
_MIB: Final = 1024 * 1024
_CPU_PERIOD_US: Final = 100_000
_POLL: Final = 0.01


class CgroupError(Exception):
    """A unit could not be made, joined or ended; the message says what to do."""


@dataclass(frozen=True, kw_only=True)
class Limits:
    """What a unit may use: memory (MiB), processes (tasks), CPU (cores; 0.5 = half a core)."""

    memory_mb: int | None = None
    pids: int | None = None
    cpus: float | None = None


@dataclass(frozen=True, kw_only=True)
class UnitUsage:
    """What a unit hit: the memory limit (the kernel killed a member), the process limit (a
    fork was refused)."""

    memory_killed: bool
    pids_refused: bool

    def reason(self) -> str | None:
        """The limit a unit's end is blamed on (None: none was hit)."""
        if self.memory_killed:
            return "it hit its memory limit and was killed by the kernel"
        if self.pids_refused:
            return "it hit its process limit (a fork was refused)"
        return None


def own_paths(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(","):
            if name:
                found[name] = path
    return found


def _stack_folder(mount: Path, own: str, stack: str) -> Path:
    return mount / own.lstrip("/") / f"clipyard-{stack}"


def _write(path: Path, value: str) -> None:
    with path.open("w", encoding="ascii") as out:
        out.write(value)


@dataclass(frozen=True)
class Unit:
    """One contained launch's groups (one folder per controller)."""

    groups: tuple[tuple[str, Path], ...]
    """``(controller, folder)`` pairs."""
    name: str

    @property
    def folders(self) -> tuple[Path, ...]:
        """The unit's folder in each hierarchy."""
        return tuple(folder for _controller, folder in self.groups)

    def _folder(self, controller: str) -> Path | None:
        return dict(self.groups).get(controller)

    def join(self) -> None:
        """Move the calling process into every group of the unit (in the forked child)."""
        pid = str(os.getpid())
        for folder in self.folders:
            _write(folder / "cgroup.procs", pid)

    def members(self) -> list[int]:
        """The pids in the unit (its freezer group holds them all)."""
        freezer = self._folder("freezer")
        if freezer is None:
            return []
        try:
            text = (freezer / "cgroup.procs").read_text(encoding="ascii")
        except OSError:
            return []
        return [int(line) for line in text.split() if line.isdigit()]

    def usage(self) -> UnitUsage:
        """Whether a limit was hit."""
        killed = refused = False
        memory, pids = self._folder("memory"), self._folder("pids")
        with contextlib.suppress(OSError):
            if memory is not None:
                for line in (memory / "memory.oom_control").read_text().splitlines():
                    key, _, value = line.partition(" ")
                    killed = killed or (key == "oom_kill" and value.strip() not in ("", "0"))
        with contextlib.suppress(OSError):
            if pids is not None:
                events = (pids / "pids.events").read_text().split()
                refused = len(events) >= 2 and events[1] != "0"
        return UnitUsage(memory_killed=killed, pids_refused=refused)

    def kill(self, timeout: float = 5.0) -> list[int]:
        """Freeze, SIGKILL every member, thaw, and wait for the unit to empty; returns the
        pids still there after ``timeout`` seconds."""
        freezer = self._folder("freezer")
        if freezer is None or not freezer.is_dir() or not self.members():
            return []
        deadline = time.monotonic() + timeout
        state = freezer / "freezer.state"
        with contextlib.suppress(OSError):
            _write(state, "FROZEN")
            while state.read_text().strip() == "FREEZING" and time.monotonic() < deadline:
                time.sleep(_POLL)
        while True:
            left = self.members()
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                _write(state, "THAWED")
            if not left:
                return []
            if time.monotonic() > deadline:
                return left
            time.sleep(_POLL)

    def remove(self) -> None:
        """Remove the unit's groups (they must be empty; errors ignored)."""
        for folder in self.folders:
            with contextlib.suppress(OSError):
                folder.rmdir()


@dataclass(frozen=True)
class Cgroups:
    """The stack's place in each v1 hierarchy: ``<own>/clipyard-<stack>``."""

    parents: dict[str, Path]

    @classmethod
    def probe(cls, stack: str, *, root: Path = ROOT, own_text: str | None = None) -> Cgroups:
        """Find and create the stack's groups.

        Raises:
            CgroupError: A required v1 controller is not mounted or not writable (the message
                says what to do).
        """
        text = own_text if own_text is not None else Path("/proc/self/cgroup").read_text()
        own = own_paths(text)
        parents: dict[str, Path] = {}
        for controller in (*REQUIRED, "cpu"):
            mount = root / controller
            if controller not in own or not (mount / "cgroup.procs").exists():
                if controller == "cpu":
                    continue
                raise CgroupError(
                    f"The cgroup v1 '{controller}' controller is not mounted at {mount}: "
                    "contained work needs memory, pids and freezer groups (mount them, or run "
                    "the supervisor on a host that has them)."
                )
            parent = _stack_folder(mount, own[controller], stack)
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                if controller == "cpu":
                    continue
                raise CgroupError(
                    f"Cannot create {parent} ({exc.strerror}): run the runtime-supervisor as "
                    "root with a writable cgroup v1 hierarchy."
                ) from None
            parents[controller] = parent
        return cls(parents)

    @classmethod
    def existing(cls, stack: str, *, root: Path = ROOT) -> Cgroups:
        """The stack's groups that exist now, below this process's own (nothing is created)."""
        try:
            own = own_paths(Path("/proc/self/cgroup").read_text())
        except OSError:
            return cls({})
        found = {c: _stack_folder(root / c, own[c], stack) for c in (*REQUIRED, "cpu") if c in own}
        return cls({c: folder for c, folder in found.items() if folder.is_dir()})

    def remove(self) -> None:
        """Remove the stack's groups (they must be empty; errors ignored)."""
        for parent in self.parents.values():
            with contextlib.suppress(OSError):
                parent.rmdir()

    def unit(self, name: str) -> Unit:
        """The unit ``name`` (not created: see :meth:`create`)."""
        return Unit(tuple((c, parent / name) for c, parent in self.parents.items()), name)

    def create(self, name: str, limits: Limits) -> Unit:
        """Make (or reuse) the unit ``name`` with ``limits``.

        Raises:
            CgroupError: The kernel refused a group or a limit.
        """
        unit = self.unit(name)
        try:
            for folder in unit.folders:
                folder.mkdir(exist_ok=True)
            memory = self.parents["memory"] / name
            if limits.memory_mb is not None:
                _write(memory / "memory.limit_in_bytes", str(limits.memory_mb * _MIB))
            _write(
                self.parents["pids"] / name / "pids.max",
                str(limits.pids) if limits.pids is not None else "max",
            )
            cpu = self.parents.get("cpu")
            if cpu is not None:
                quota = -1 if limits.cpus is None else max(int(limits.cpus * _CPU_PERIOD_US), 1000)
                _write(cpu / name / "cpu.cfs_quota_us", str(quota))
        except OSError as exc:
            unit.remove()
            raise CgroupError(f"Cannot set up the resource group {name}: {exc}") from None
        return unit

    def units(self) -> list[str]:
        """The units that exist now (a restart adopts or ends them)."""
        names: set[str] = set()
        for parent in self.parents.values():
            with contextlib.suppress(OSError):
                names.update(entry.name for entry in parent.iterdir() if entry.is_dir())
        return sorted(names)
