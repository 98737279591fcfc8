"""``clipyard status``: every service's ping (name, version, latency) and the event stream's state."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TextIO

import nats.js.errors

from clipyard_cli.bus import Ping, connect_cli, login_from_env, ping_service
from contracts.subjects import EVENT_STREAM, SERVICE_NAMES, SERVICES

__all__ = ["StreamState", "format_services", "format_stream", "run_status"]


@dataclass(frozen=True)
class StreamState:
    """What ``clipyard status`` shows of the ``WS_EVENTS`` stream."""

    messages: int
    bytes: int
    first_seq: int
    last_seq: int
    consumers: int


def format_services(rows: Sequence[tuple[str, Ping | None]]) -> str:
    """One line per service: name, ok/DOWN, version, ping latency, instance id."""
    lines = [f"{'SERVICE':<22}{'STATUS':<8}{'VERSION':<10}{'LATENCY':>10}  ID"]
    for name, ping in rows:
        if ping is None:
            lines.append(f"{name:<22}{'DOWN':<8}{'-':<10}{'-':>10}  -")
        else:
            latency = f"{ping.latency_ms:.1f} ms"
            lines.append(f"{name:<22}{'ok':<8}{ping.version:<10}{latency:>10}  {ping.id}")
    return "\n".join(lines)


def format_stream(server_version: str, url: str, state: StreamState | None) -> str:
    """The NATS server line and the ``WS_EVENTS`` line."""
    lines = [f"nats       ok  nats-server {server_version} at {url}"]
    if state is None:
        lines.append(
            f"jetstream  {EVENT_STREAM}: not created yet (the services create it at start)"
        )
    else:
        lines.append(
            f"jetstream  {EVENT_STREAM}: {state.messages} messages, {state.bytes} bytes, "
            f"seq {state.first_seq}..{state.last_seq}, {state.consumers} consumers"
        )
    return "\n".join(lines)


async def run_status(env: Mapping[str, str], out: TextIO | None = None) -> int:
    """Print the stack's status.

    Returns:
        0 when every service answers, 1 otherwise.
    """
    out = sys.stdout if out is None else out
    login = login_from_env(env)
    nc = await connect_cli(login)
    try:
        names = [SERVICE_NAMES[token] for token in SERVICES]
        pings = await asyncio.gather(*(ping_service(nc, name) for name in names))
        try:
            info = await nc.jetstream().stream_info(EVENT_STREAM)
            state: StreamState | None = StreamState(
                messages=info.state.messages,
                bytes=info.state.bytes,
                first_seq=info.state.first_seq,
                last_seq=info.state.last_seq,
                consumers=info.state.consumer_count,
            )
        except nats.js.errors.NotFoundError:
            state = None
        version = nc.connected_server_version
        server = f"{version.major}.{version.minor}.{version.patch}"
    finally:
        await nc.close()
    print(format_services(list(zip(names, pings, strict=True))), file=out)
    print(format_stream(server, login.url, state), file=out, flush=True)
    return 0 if all(pings) else 1
