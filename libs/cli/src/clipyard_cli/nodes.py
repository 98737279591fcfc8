"""``clipyard nodes``: the worker nodes, as the runtime-supervisors know them (``ws.qry.node.list``):
one line each with its state, which of its processes answer, its supervisor, when it last
answered, and what it can hold."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TextIO

import msgspec

from clipyard_cli.bus import CLI_PRINCIPAL, connect_cli, login_from_env
from contracts.nodes import NODE_LIST, ListNodes, NodeView
from natsbus.client import BusClient, BusRequestError

__all__ = ["format_nodes", "run_nodes"]


def _gib(size: int) -> str:
    return f"{size / 2**30:.1f} GiB"


def format_nodes(nodes: Sequence[NodeView], now: datetime) -> str:
    """A table of ``nodes``, or a line saying there is none."""
    if not nodes:
        return "no worker node has registered (is a runtime-supervisor running?)"
    lines = [
        f"{'NODE':<16}{'STATE':<13}{'PARTS':<20}{'SUPERVISOR':<28}{'SEEN':>8}  CAPACITY".rstrip()
    ]
    for node in nodes:
        seen = "-"
        if node.last_seen_at is not None:
            seen = f"{max((now - node.last_seen_at).total_seconds(), 0):.0f} s"
        capacity = node.capacity
        held = (
            f"{capacity.slots} slots, ports {capacity.port_range}, {capacity.cpus} cpus, "
            f"{_gib(capacity.memory_bytes)} memory, {_gib(capacity.disk_free_bytes)} disk free"
        )
        parts = ",".join(node.parts) or "none answers"
        lines.append(
            f"{node.id:<16}{node.state:<13}{parts:<20}{node.instance:<28}{seen:>8}  {held}"
        )
    return "\n".join(lines)


async def run_nodes(
    env: Mapping[str, str], out: TextIO | None = None, as_json: bool = False
) -> int:
    """Print the worker nodes.

    Returns:
        0 when every node is ``ready``, 1 otherwise (or when none registered).
    """
    out = sys.stdout if out is None else out
    nc = await connect_cli(login_from_env(env))
    try:
        request = ListNodes(principal=CLI_PRINCIPAL)
        nodes = await BusClient(nc).call(NODE_LIST, request, list[NodeView], timeout=10.0)
    except BusRequestError as error:
        print(
            f"clipyard nodes: the runtime-supervisors gave no node list ({error.reply.message}); "
            "is the stack running? (`clipyard status` shows what answers)",
            file=sys.stderr,
        )
        return 1
    finally:
        await nc.close()
    if as_json:
        print(msgspec.json.encode(nodes).decode(), file=out)
    else:
        print(format_nodes(nodes, datetime.now(UTC)), file=out)
    return 0 if nodes and all(node.state == "ready" for node in nodes) else 1
