"""``clipyard status``: every service's ping (name, version, latency) and read-model projection
failures (from ``$SRV.STATS``, :mod:`servicekit.health`), the NATS servers it uses (the one it
reached, every one of ``CLIPYARD_NATS_URL``, and whether they are external), the event stream's
state, and, while a ``clipyard up`` runs with this home, each of its processes (state, pid, uptime, and
how often and when ``up`` restarted it, from ``run/stack.json``)."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TextIO

import nats.js.errors

from clipyard_cli.bus import Ping, connect_cli, login_from_env, ping_service, read_model_health
from clipyard_cli.home import resolve_home
from clipyard_cli.natsmode import nats_external
from clipyard_cli.probes import format_duration
from clipyard_cli.runstate import ProcessRecord, lock_holder, read_records
from contracts.service import ReadModelHealth
from contracts.subjects import EVENT_STREAM, SERVICE_NAMES, SERVICES
from natsbus.connection import NatsConnectError
from natsbus.urls import parse_nats_urls

__all__ = ["StreamState", "format_processes", "format_services", "format_stream", "run_status"]


@dataclass(frozen=True)
class StreamState:
    """What ``clipyard status`` shows of the ``WS_EVENTS`` stream."""

    messages: int
    bytes: int
    first_seq: int
    last_seq: int
    consumers: int


def format_services(
    rows: Sequence[tuple[str, Ping | None]],
    health: Mapping[str, ReadModelHealth | None] | None = None,
) -> str:
    """One line per service: name, ok/DOWN, version, ping latency, instance id.

    With ``health`` (by service name), a ``PROJECTION`` column follows: ``ok``, ``N FAILED`` for
    a service whose read models failed to project N stored events (a ``!`` line under the table
    says what to do), or ``-`` when the service did not tell.
    """
    header = f"{'SERVICE':<22}{'STATUS':<8}{'VERSION':<10}{'LATENCY':>10}  {'ID':<24}"
    lines = [header + "PROJECTION" if health is not None else header.rstrip()]
    failing: list[tuple[str, int]] = []
    for name, ping in rows:
        if ping is None:
            line = f"{name:<22}{'DOWN':<8}{'-':<10}{'-':>10}  {'-':<24}"
        else:
            latency = f"{ping.latency_ms:.1f} ms"
            line = f"{name:<22}{'ok':<8}{ping.version:<10}{latency:>10}  {ping.id:<24}"
        if health is None:
            lines.append(line.rstrip())
            continue
        report = health.get(name)
        if ping is None or report is None:
            lines.append(line + "-")
        elif report.projection_failures:
            lines.append(line + f"{report.projection_failures} FAILED")
            failing.append((name, report.projection_failures))
        else:
            lines.append(line + "ok")
    lines.extend(
        f"! {name}: {count} stored event{'s' if count != 1 else ''} failed to project into its "
        "read models (logged as 'read-model projection failed'); its queries may be wrong until "
        f"it is fixed and restarted. Check with `clipyard replay {name} --verify`."
        for name, count in failing
    )
    return "\n".join(lines)


def format_stream(
    server_version: str,
    url: str,
    state: StreamState | None,
    *,
    servers: Sequence[str] = (),
    external: bool = False,
) -> str:
    """The NATS server line (``url``: the server reached), with ``servers`` a line of every
    server the CLI may use and whether they are external, and the ``WS_EVENTS`` line."""
    lines = [f"nats       ok  nats-server {server_version} at {url}"]
    if servers:
        whose = "external: `clipyard up` starts none" if external else "`clipyard up` starts it"
        lines.append(f"servers    {', '.join(servers)}   ({whose})")
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


def format_processes(up_pid: int, records: Mapping[str, ProcessRecord], now: float) -> str:
    """The processes of the running ``clipyard up``: one line each with its state, pid, uptime,
    restarts and the last restart (clock time, how long ago, and how the process before ended).

    Args:
        up_pid: The pid of ``clipyard up``.
        records: Its ``run/stack.json``.
        now: The current time (seconds since the epoch).
    """
    lines = [
        f"clipyard up (pid {up_pid}) runs:",
        f"{'PROCESS':<22}{'STATE':<32}{'PID':>8}{'UPTIME':>9}{'RESTARTS':>10}  LAST RESTART",
    ]
    for name, record in records.items():
        state: str = record.state
        if record.state == "restarting" and record.next_start is not None:
            state = f"restarting in {max(record.next_start - now, 0):.0f} s"
        if record.crash_loop:
            state += ", crash loop"
        pid = str(record.pid) if record.pid is not None else "-"
        uptime = "-"
        if record.pid is not None and record.started is not None:
            uptime = format_duration(max(now - record.started, 0.0))
        last = "-"
        if record.last_restart is not None:
            clock = time.strftime("%H:%M:%S", time.localtime(record.last_restart))
            ago = format_duration(max(now - record.last_restart, 0.0))
            last = f"{clock} ({ago} ago)"
            if record.last_exit:
                last += f", after {record.last_exit}"
        lines.append(
            f"{name:<22}{state:<32}{pid:>8}{uptime:>9}{record.restarts:>10}  {last}".rstrip()
        )
    return "\n".join(lines)


async def run_status(env: Mapping[str, str], out: TextIO | None = None) -> int:
    """Print the stack's status.

    The processes of a running ``clipyard up`` are printed even when NATS does not answer
    (then the connection error follows).

    Returns:
        0 when every service answers, 1 otherwise.
    """
    out = sys.stdout if out is None else out
    login = login_from_env(env)
    processes = _processes(env)
    try:
        nc = await connect_cli(login)
    except NatsConnectError:
        if processes:
            print(processes, file=out, flush=True)
        raise
    try:
        names = [SERVICE_NAMES[token] for token in SERVICES]
        pings = await asyncio.gather(*(ping_service(nc, name) for name in names))
        reports = await asyncio.gather(*(read_model_health(nc, name) for name in names))
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
        reached = nc.connected_url
        url = f"{reached.scheme}://{reached.hostname}:{reached.port}" if reached else "?"
    finally:
        await nc.close()
    health = dict(zip(names, reports, strict=True))
    print(format_services(list(zip(names, pings, strict=True)), health), file=out)
    servers = [one.shown for one in parse_nats_urls(login.url)]
    shown = format_stream(server, url, state, servers=servers, external=nats_external(env))
    print(shown, file=out, flush=True)
    if processes:
        print(processes, file=out, flush=True)
    return 0 if all(pings) else 1


def _processes(env: Mapping[str, str]) -> str:
    """The running ``clipyard up``'s processes, or empty when none runs with this home."""
    home = resolve_home(env)
    up_pid = lock_holder(home)
    records = read_records(home) if up_pid is not None else {}
    return format_processes(up_pid, records, time.time()) if up_pid and records else ""
