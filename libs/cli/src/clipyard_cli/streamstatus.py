"""What ``clipyard status`` shows of NATS and the event stream: the server it reached, the servers
it may use, and ``WS_EVENTS``: its messages and consumers, how many servers keep it
(``num_replicas``) and, in a cluster, which server leads it and how current each replica is (from
JetStream's stream info); with a single server it says there is no cluster."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import nats.js.errors

from clipyard_cli.probes import format_duration
from contracts.subjects import EVENT_STREAM

if TYPE_CHECKING:
    from nats.js.api import StreamInfo
    from nats.js.client import JetStreamContext

__all__ = ["StreamReplica", "StreamState", "format_stream", "read_stream_state", "stream_state"]


@dataclass(frozen=True)
class StreamReplica:
    """One server keeping a copy of the stream (its cluster's view of it)."""

    name: str
    leader: bool = False
    current: bool = True
    """It has every message the leader has (the leader always is)."""
    offline: bool = False
    lag: int = 0
    """Operations behind the leader."""
    seen_s: float | None = None
    """Seconds since the leader last heard from it (``None`` for the leader)."""


@dataclass(frozen=True)
class StreamState:
    """What ``clipyard status`` shows of the ``WS_EVENTS`` stream."""

    messages: int
    bytes: int
    first_seq: int
    last_seq: int
    consumers: int
    replicas: int = 1
    """How many servers keep it (``num_replicas``)."""
    cluster: str | None = None
    """The NATS cluster's name; ``None`` on a single server."""
    leader: str | None = None
    """The server leading the stream (``None`` in a cluster: it has no leader now)."""
    peers: tuple[StreamReplica, ...] = ()
    """Every replica in a cluster, the leader first."""


def stream_state(info: StreamInfo) -> StreamState:
    """What ``info`` (``js.stream_info``) says about the stream, its replicas and leader."""
    cluster = info.cluster
    name = cluster.name if cluster else None
    leader = cluster.leader if cluster else None
    peers: list[StreamReplica] = []
    if name is not None:
        if leader:
            peers.append(StreamReplica(name=leader, leader=True))
        peers.extend(
            StreamReplica(
                name=peer.name or "?",
                current=bool(peer.current),
                offline=bool(peer.offline),
                lag=peer.lag or 0,
                seen_s=None if peer.active is None else peer.active / 1e9,
            )
            for peer in (cluster.replicas if cluster and cluster.replicas else [])
        )
    return StreamState(
        messages=info.state.messages,
        bytes=info.state.bytes,
        first_seq=info.state.first_seq,
        last_seq=info.state.last_seq,
        consumers=info.state.consumer_count,
        replicas=info.config.num_replicas or 1,
        cluster=name,
        leader=leader or None,
        peers=tuple(peers),
    )


async def read_stream_state(js: JetStreamContext) -> StreamState | None:
    """The event stream's state, or ``None`` while it does not exist."""
    try:
        return stream_state(await js.stream_info(EVENT_STREAM))
    except nats.js.errors.NotFoundError:
        return None


def format_stream(
    server_version: str,
    url: str,
    state: StreamState | None,
    *,
    servers: Sequence[str] = (),
    external: bool = False,
) -> str:
    """The NATS server line (``url``: the server reached), with ``servers`` a line of every
    server the CLI may use and whether they are external, the ``WS_EVENTS`` line, and its
    replicas: a line for a single server, a table of them in a cluster."""
    lines = [f"nats       ok  nats-server {server_version} at {url}"]
    if servers:
        whose = "external: `clipyard up` starts none" if external else "`clipyard up` starts it"
        lines.append(f"servers    {', '.join(servers)}   ({whose})")
    if state is None:
        lines.append(
            f"jetstream  {EVENT_STREAM}: not created yet (the services create it at start)"
        )
        return "\n".join(lines)
    lines.append(
        f"jetstream  {EVENT_STREAM}: {state.messages} messages, {state.bytes} bytes, "
        f"seq {state.first_seq}..{state.last_seq}, {state.consumers} consumers"
    )
    lines.extend(_replica_lines(state))
    return "\n".join(lines)


_INDENT = " " * 11


def _replica_lines(state: StreamState) -> list[str]:
    """Where the stream's copies are: one line on a single server, a table in a cluster."""
    if state.cluster is None:
        return [f"{_INDENT}R{state.replicas} on a single server (no cluster)"]
    leader = state.leader or "NONE (the stream takes no writes until the cluster elects one)"
    lines = [f"{_INDENT}R{state.replicas} in cluster {state.cluster}, leader {leader}"]
    lines.append(f"{_INDENT}{'REPLICA':<16}{'ROLE':<10}{'CURRENT':<9}{'LAG':>6}  SEEN")
    for peer in state.peers:
        current = "OFFLINE" if peer.offline else "yes" if peer.current else "NO"
        seen = "-" if peer.seen_s is None or peer.offline else f"{format_duration(peer.seen_s)} ago"
        role = "leader" if peer.leader else "follower"
        lines.append(f"{_INDENT}{peer.name:<15} {role:<10}{current:<9}{peer.lag:>6}  {seen}")
    if len(state.peers) < state.replicas:
        lines.append(
            f"! {EVENT_STREAM} is kept at R{state.replicas} but only {len(state.peers)} "
            "replicas report: a server that keeps it is missing from the cluster"
        )
    behind = [
        f"{peer.name} (offline)" if peer.offline else peer.name
        for peer in state.peers
        if peer.offline or not peer.current
    ]
    if behind:
        some = len(behind) > 1
        lines.append(
            f"! {EVENT_STREAM}: {', '.join(behind)} {'are' if some else 'is'} not current: new "
            f"events are kept on fewer servers until {'they catch' if some else 'it catches'} up"
        )
    return lines
