"""The worker nodes of ``clipyard cluster up``: two hosts' worth of host-bound processes on one
machine (docs/scale-out.md, "Worker nodes").

A worker node is a workspace-realizer host part and a runtime-supervisor under one
``CLIPYARD_NODE_ID``, with a home of their own (worktrees, managed clones, run folders, logs)
and a port range of their own for runtime services. The first node is the stack's own home and
node id (``CLIPYARD_NODE_ID``, default ``local``); the second, ``nodeb``, lives in
``<home>-nodeb`` beside it. Each node's processes run in a mount namespace of their own in which
every other node's home is an empty, private ``tmpfs``: neither host sees the other's files, as
on two machines (and what they start, services and agents, inherits that view). Without
``unshare`` or the right to mount (not root), the nodes run side by side and say so.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from clipyard_cli.bus import stop_all_runtime
from clipyard_cli.leftovers import stop_leftover_services

if TYPE_CHECKING:
    from nats.aio.client import Client

    from clipyard_cli.clusterservices import Replica

__all__ = [
    "HOST_REPLICAS",
    "SECOND_NODE",
    "WorkerNode",
    "hidden_homes_argv",
    "stop_runtime",
    "worker_nodes",
]

SECOND_NODE: Final = "nodeb"
SECOND_PORT_RANGE: Final = "43000-43999"
HOST_REPLICAS: Final[Mapping[tuple[str, int], int]] = {
    ("realizer", 1): 0,
    ("realizer", 4): 1,
    ("supervisor", 1): 0,
    ("supervisor", 2): 1,
}
"""(service token, replica index) -> the worker node (index into :func:`worker_nodes`) of the
host-bound replicas: workspace-realizer host parts and runtime-supervisors."""

_HIDE: Final = (
    'for hidden in "$@"; do [ "$hidden" = -- ] && break; '
    'range=$(cat "$hidden/id-range" 2>/dev/null); '
    'mount -t tmpfs -o mode=0700,size=1m clipyard-hidden "$hidden" || exit 97; '
    '[ -n "$range" ] && echo "$range" > "$hidden/id-range"; done; '
    'while [ "$1" != -- ]; do shift; done; shift; exec "$@"'
)
"""The shell run by ``unshare``: a tmpfs over each path up to ``--``, then the command. The
tmpfs holds only the hidden home's ``id-range`` marker: the host's registry of uid ranges
(``/var/lib/clipyard/id-ranges.json``) counts a range whose home has no marker as gone, and a
supervisor that could not see the other node's marker would take that node's range, and its
network-namespace names, as its own."""


@dataclass(frozen=True)
class WorkerNode:
    """One worker node of the local cluster."""

    node_id: str
    home: Path
    port_range: str | None
    """``CLIPYARD_PORT_RANGE`` of its supervisor (None: the caller's, or the default)."""

    def env(self, base: Mapping[str, str]) -> dict[str, str]:
        """``base`` with this node's id, home and port range."""
        env = dict(base, CLIPYARD_NODE_ID=self.node_id, CLIPYARD_HOME=str(self.home))
        if self.port_range is not None:
            env["CLIPYARD_PORT_RANGE"] = self.port_range
        return env


def worker_nodes(home: Path, env: Mapping[str, str]) -> tuple[WorkerNode, WorkerNode]:
    """The stack's node (``home``, ``CLIPYARD_NODE_ID`` or ``local``) and ``nodeb`` beside it."""
    first = WorkerNode(env.get("CLIPYARD_NODE_ID") or "local", home, None)
    second = WorkerNode(SECOND_NODE, home.with_name(f"{home.name}-{SECOND_NODE}"), None)
    if first.node_id == SECOND_NODE:
        raise ValueError(f"CLIPYARD_NODE_ID={SECOND_NODE} is the cluster's second node's id")
    return first, WorkerNode(second.node_id, second.home, SECOND_PORT_RANGE)


def hidden_homes_argv(argv: Sequence[str], hidden: Sequence[Path]) -> list[str]:
    """``argv`` run in a new mount namespace where each of ``hidden`` is an empty tmpfs (the
    same pid: ``unshare`` and the shell exec, so the parent-death signal holds); ``argv`` as it
    is when namespaces cannot be made here (no ``unshare``, not root)."""
    unshare = shutil.which("unshare")
    if not hidden or unshare is None or os.geteuid() != 0:
        return list(argv)
    paths = [str(path) for path in hidden]
    return [
        unshare,
        "--mount",
        "--propagation",
        "private",
        "/bin/sh",
        "-c",
        _HIDE,
        "sh",
        *paths,
        "--",
        *argv,
    ]


async def stop_runtime(
    nc: Client | None,
    replicas: Sequence[Replica],
    nodes: Sequence[WorkerNode],
    say: Callable[[str], None],
) -> None:
    """Stop every node's runtime services: each running supervisor's stop-all, then a sweep of
    each node's home for what is left."""
    for supervisor in (r for r in replicas if r.launch.token == "supervisor"):
        process = supervisor.process
        alive = process is not None and process.alive()
        if alive and nc is not None and nc.is_connected:
            node_id = supervisor.env["CLIPYARD_NODE_ID"]
            with contextlib.suppress(Exception):
                say(await stop_all_runtime(nc, node_id, timeout=30.0))
    for worker in nodes:
        left = await asyncio.to_thread(stop_leftover_services, worker.home)
        if left:
            say(
                f"stopped {len(left)} runtime service(s) the supervisor of node "
                f"{worker.node_id} left running"
            )
