"""``clipyard nodes drain NODE``: drain a worker node (docs/scale-out.md, "Draining a node") and
print what moved, what waits for its runs and what stays, with why; ``clipyard nodes undrain
NODE`` takes it back for new placements."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TextIO

import msgspec

from clipyard_cli.bus import CLI_PRINCIPAL, connect_cli, login_from_env
from contracts.drains import NODE_UNDRAIN, DrainNode, DrainReport, UndrainNode, drain_node
from contracts.nodes import NodeView
from natsbus.client import BusClient, BusRequestError

__all__ = ["format_report", "run_drain", "run_undrain"]

DRAIN_TIMEOUT = 3600.0


def format_report(report: DrainReport) -> str:
    """The report, one line per workspace."""
    lines = [f"node {report.node_id}: draining"]
    for moved in report.moved:
        files = f", {moved.file_count} uncommitted files" if moved.file_count else ""
        services = (
            f", restarted {', '.join(moved.services_restarted)}" if moved.services_restarted else ""
        )
        lines.append(
            f"  moved    {moved.workspace_id} -> {moved.to_node} at {moved.cwd}{files}{services}"
        )
        lines += [f"           warning: {w}" for w in moved.warnings]
    for waiting in report.waiting:
        lines.append(
            f"  waiting  {waiting.workspace_id}: held by runs {', '.join(waiting.run_ids)}"
        )
    for stays in report.not_moved:
        what = stays.workspace_id or f"project workspace {stays.project_workspace_id}"
        lines.append(f"  stays    {what} ({stays.reason}): {stays.message}")
    lines.append(f"{report.remaining} workspaces remain on node {report.node_id}")
    return "\n".join(lines)


async def run_drain(
    env: Mapping[str, str],
    node: str,
    *,
    reason: str | None = None,
    as_json: bool = False,
    out: TextIO | None = None,
) -> int:
    """Drain ``node``.

    Returns:
        0 when nothing is left on it, 1 when some stays or waits (or the drain failed).
    """
    out = sys.stdout if out is None else out
    nc = await connect_cli(login_from_env(env))
    try:
        command = DrainNode(principal=CLI_PRINCIPAL, node_id=node, reason=reason)
        client = BusClient(nc)
        report = await client.call(drain_node(node), command, DrainReport, timeout=DRAIN_TIMEOUT)
    except BusRequestError as error:
        print(
            f"clipyard nodes drain: node {node} did not drain ({error.reply.message}); "
            "`clipyard nodes` shows which nodes answer",
            file=sys.stderr,
        )
        return 1
    finally:
        await nc.close()
    print(msgspec.json.encode(report).decode() if as_json else format_report(report), file=out)
    return 0 if report.remaining == 0 else 1


async def run_undrain(env: Mapping[str, str], node: str, out: TextIO | None = None) -> int:
    """Take ``node`` back for new placements.

    Returns:
        0 when the registry took it back, 1 otherwise.
    """
    out = sys.stdout if out is None else out
    nc = await connect_cli(login_from_env(env))
    try:
        command = UndrainNode(principal=CLI_PRINCIPAL, node_id=node)
        view = await BusClient(nc).call(NODE_UNDRAIN, command, NodeView, timeout=10.0)
    except BusRequestError as error:
        print(f"clipyard nodes undrain: {error.reply.message}", file=sys.stderr)
        return 1
    finally:
        await nc.close()
    print(f"node {view.id}: {view.state}", file=out)
    return 0
