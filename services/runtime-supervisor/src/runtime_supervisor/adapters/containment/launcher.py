"""The one launcher of everything a company runs on this node (docs/design/isolation.md):
services, jobs, the runtime provision command and untrusted agents.

:meth:`Launcher.start` checks once, at the supervisor's start, that the host can contain work:
root, ``bwrap`` and ``setpriv`` in the system's folders, the host-wide id range of this stack,
and the cgroup v1 ``memory``, ``pids`` and ``freezer`` controllers. A host that lacks one of them
refuses contained work with what to install (:meth:`Launcher.require`); it never falls back to
running unconfined.

:meth:`Launcher.prepare` (blocking) gives a launch its company's identity and a fresh resource
unit, and hands a folder Clipyard made (a worktree, a managed checkout) to the identity;
:meth:`Launcher.command` is the argv to run and :func:`joiner` what the child runs before exec
(join the unit, set the rlimits).
"""

from __future__ import annotations

import logging
import os
import resource
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from runtime_supervisor.adapters.containment import netns
from runtime_supervisor.adapters.containment.cgroups import CgroupError, Cgroups, Limits, Unit
from runtime_supervisor.adapters.containment.cleanup import drop_stacks
from runtime_supervisor.adapters.containment.identities import (
    Identities,
    Identity,
    IdentityError,
    claim_range,
)
from runtime_supervisor.adapters.containment.relays import (
    GATE_RECORD,
    ensure_gate,
    gate_of,
    stop_relays_into,
)
from runtime_supervisor.adapters.containment.sandbox import Tools, sandbox_argv
from runtime_supervisor.adapters.slots.ownership import chown_tree, own_pointer

__all__ = ["Contained", "ContainmentUnavailableError", "Launcher", "joiner"]

log = logging.getLogger(__name__)

SYSTEM_DIRS: Final = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
DEFAULT_PIDS: Final = 4096
"""A unit's process limit when none is set (a fork bomb stops there)."""
_DEFAULT_FILE_SIZE: Final = 1024 * 1024 * 1024


class ContainmentUnavailableError(Exception):
    """This host cannot contain work; the message says what to install or change."""


def _find(name: str, dirs: Sequence[str]) -> str | None:
    for folder in dirs:
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


@dataclass(frozen=True, kw_only=True)
class Contained:
    """A prepared launch: who it runs as and its resource unit."""

    identity: Identity
    unit: Unit


@dataclass(kw_only=True)
class Launcher:
    """The node's launcher (see the module's docstring)."""

    home: Path
    toolchains: tuple[Path, ...] = ()
    tools: Tools | None = None
    identities: Identities | None = None
    cgroups: Cgroups | None = None
    detail: str = ""
    egress_open: str = ""
    """The host networks an allowlist may name (``CLIPYARD_EGRESS_HOST_NETWORKS``)."""
    service_ports: tuple[int, int] | None = None
    """The ports services are given (``CLIPYARD_PORT_RANGE``): no namespace's ephemeral port."""
    _owned: set[str] = field(default_factory=set)

    @classmethod
    def start(
        cls,
        home: Path,
        toolchains: Sequence[Path] = (),
        *,
        dirs: Sequence[str] = SYSTEM_DIRS,
        egress_open: str = "",
        service_ports: tuple[int, int] | None = None,
    ) -> Launcher:
        """Probe the host (blocking); an unusable host gives a launcher that refuses work.
        ``bwrap`` and ``setpriv`` are looked for in ``dirs`` only (never through a ``PATH``)."""
        launcher = cls(
            home=home,
            toolchains=tuple(toolchains),
            egress_open=egress_open,
            service_ports=service_ports,
        )
        if os.geteuid() != 0:
            launcher.detail = (
                f"The runtime-supervisor runs as uid {os.geteuid()}, not root, so it cannot run "
                "a company's commands as an unprivileged identity: run it as root."
            )
            return launcher
        bwrap, setpriv = _find("bwrap", dirs), _find("setpriv", dirs)
        nsenter, ip, nft = _find("nsenter", dirs), _find("ip", dirs), _find("nft", dirs)
        if bwrap is None or setpriv is None or nsenter is None or ip is None or nft is None:
            launcher.detail = (
                "bwrap (bubblewrap), setpriv or nsenter (util-linux), ip (iproute2) or nft "
                "(nftables) is not installed, so nothing a company runs can be contained: "
                "install them (./dev does: apt-get install bubblewrap util-linux iproute2 "
                "nftables) and restart the runtime-supervisor."
            )
            return launcher
        try:
            ids, gone = claim_range(home)
            drop_stacks([str(base) for base in gone])  # their homes are gone: end what is left
            identities = Identities(home, ids)
            cgroups = Cgroups.probe(identities.stack)
        except (IdentityError, CgroupError, OSError) as exc:
            launcher.detail = f"{exc}"
            return launcher
        launcher.tools = Tools(bwrap=bwrap, setpriv=setpriv, nsenter=nsenter)
        launcher.identities, launcher.cgroups = identities, cgroups
        launcher.detail = (
            "a company's commands and untrusted agents run as its own uid in bwrap, "
            "in cgroups with limits"
        )
        return launcher

    @property
    def available(self) -> bool:
        """Whether work can be contained here."""
        return self.tools is not None

    def require(self) -> tuple[Tools, Identities, Cgroups]:
        """The parts of containment.

        Raises:
            ContainmentUnavailableError: The host cannot contain work (say what to do).
        """
        if self.tools is None or self.identities is None or self.cgroups is None:
            raise ContainmentUnavailableError(
                f"This node cannot contain a company's work, so it does not run it: {self.detail}"
            )
        return self.tools, self.identities, self.cgroups

    def unit(self, name: str) -> Unit | None:
        """The unit ``name`` (None when there are no cgroups here)."""
        return self.cgroups.unit(name) if self.cgroups is not None else None

    def prepare(
        self, company_id: str, unit: str, limits: Limits, *, own: Sequence[Path] = ()
    ) -> Contained:
        """The company's identity, the unit ``unit`` (created, with ``limits``; a process
        limit of :data:`DEFAULT_PIDS` when none is given), and each folder of ``own`` handed
        to the identity (once per node run). Blocking.

        Raises:
            ContainmentUnavailableError: The host cannot contain work.
            IdentityError: No identity is left.
            CgroupError: The unit could not be made.
            OSError: A folder could not be handed over.
        """
        _tools, identities, cgroups = self.require()
        identity = identities.of(company_id)
        if limits.pids is None:
            limits = Limits(memory_mb=limits.memory_mb, pids=DEFAULT_PIDS, cpus=limits.cpus)
        made = cgroups.create(unit, limits)
        for folder in own:
            self.hand_to(folder, identity)
        return Contained(identity=identity, unit=made)

    def hand_to(self, folder: Path, identity: Identity) -> None:
        """Make ``folder`` (a tree Clipyard made) the identity's, unless it already is: all but
        its ``.git`` (a checkout's git dir stays root's: root's git reads its config)."""
        key = f"{folder}:{identity.uid}"
        if key in self._owned:
            return
        if folder.is_dir() and os.lstat(folder).st_uid != identity.uid:
            chown_tree(folder, identity.uid, identity.gid, skip=(".git",))
            own_pointer(folder / ".git")  # a worktree's pointer stays root's (and read-only)
        self._owned.add(key)

    def command(
        self,
        command: Sequence[str],
        contained: Contained,
        *,
        cwd: Path,
        writable: Sequence[Path],
        binds: Sequence[str] = (),
        netns: Path | None = None,
    ) -> list[str]:
        """The argv of a contained ``command`` (see :func:`sandbox_argv`)."""
        tools, _identities, _cgroups = self.require()
        hidden = [path for path in self.toolchains if not _overlaps(path, self.home)]
        return sandbox_argv(
            command,
            cwd=cwd,
            identity=contained.identity,
            tools=tools,
            writable=writable,
            readable=hidden,
            binds=binds,
            netns=netns,
        )

    def namespace(self, key: str) -> Path:
        """The network namespace of ``key`` (a workspace or run id), made if missing, with its
        egress gate running. Blocking.

        Raises:
            ContainmentUnavailableError: The host cannot contain work.
            NetnsError: The namespace could not be made.
            OSError: Its gate could not start.
        """
        _tools, identities, _cgroups = self.require()
        path = netns.ensure(netns.namespace_name(identities.stack, key), self.service_ports)
        ensure_gate(self.home, path.name, path, self.egress_open)
        return path

    def revive_gates(self) -> int:
        """Start again the gate of every namespace of this stack that still exists and whose
        gate died (at adoption); returns how many were started. Blocking."""
        if self.identities is None:
            return 0
        started = 0
        for path in sorted(netns.NETNS_DIR.glob(f"cy{self.identities.stack}-*")):
            folder = self.home / "netns" / path.name
            if not (folder / GATE_RECORD).exists():
                continue
            try:
                before = gate_of(self.home, path.name)
                if ensure_gate(self.home, path.name, path, self.egress_open).pid != before:
                    started += 1
            except OSError as exc:
                log.error("the gate of %s could not start again: %s", path.name, exc)
        return started

    def namespace_folder(self, key: str) -> Path | None:
        """Where the files of ``key``'s namespace live (its policy, run and tally)."""
        if self.identities is None:
            return None
        return self.home / "netns" / netns.namespace_name(self.identities.stack, key)

    def drop_all(self) -> None:
        """End every relay, unit and namespace of this stack (``clipyard down``). Blocking."""
        if self.identities is not None:
            drop_stacks([self.identities.stack])

    def drop_namespace(self, key: str) -> None:
        """Remove the network namespace of ``key`` (and the relays into it). Blocking."""
        if self.identities is None:
            return
        name = netns.namespace_name(self.identities.stack, key)
        stop_relays_into(self.home, name)
        netns.delete(name)


def _overlaps(path: Path, home: Path) -> bool:
    a, b = str(path.resolve()).rstrip("/") + "/", str(home.resolve()).rstrip("/") + "/"
    return a.startswith(b) or b.startswith(a)


def joiner(
    unit: Unit | None, limits: Sequence[tuple[int, int]] = (), *, file_size: bool = True
) -> Callable[[], None] | None:
    """What the child runs before exec: join ``unit``, set each ``(resource, value)`` limit,
    and (``file_size``) a 1 GiB ``RLIMIT_FSIZE`` unless one is given."""
    pairs = list(limits)
    if file_size and not any(which == resource.RLIMIT_FSIZE for which, _ in pairs):
        pairs.append((resource.RLIMIT_FSIZE, _DEFAULT_FILE_SIZE))
    if unit is None and not pairs:
        return None

    def apply() -> None:
        if unit is not None:
            unit.join()
        for which, value in pairs:
            resource.setrlimit(which, (value, value))

    return apply
