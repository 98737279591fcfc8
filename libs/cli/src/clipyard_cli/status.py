"""``clipyard status``: every instance of every service (instance id, node, version, ping
latency, whether it leads the service or stands by, and its read-model projection failures, from
``$SRV.PING`` and ``$SRV.STATS``: :func:`clipyard_cli.bus.service_instances`), who holds each
service's lease, the NATS servers it uses (the one it reached, every one of ``CLIPYARD_NATS_URL``,
and whether they are external), the event stream's state and replicas
(:mod:`clipyard_cli.streamstatus`), and, while a ``clipyard up`` runs with this home, each of its
processes (state, pid, uptime, and how often and when ``up`` restarted it, from
``run/stack.json``)."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TextIO

import msgspec

from clipyard_cli.bus import InstanceStatus, connect_cli, login_from_env, service_instances
from clipyard_cli.home import resolve_home
from clipyard_cli.natsmode import nats_external
from clipyard_cli.probes import format_duration
from clipyard_cli.runstate import ProcessRecord, lock_holder, read_records
from clipyard_cli.streamstatus import StreamState, format_stream, read_stream_state
from contracts.subjects import SERVICE_NAMES, SERVICES
from natsbus.connection import NatsConnectError
from natsbus.urls import parse_nats_urls

__all__ = [
    "Lease",
    "StreamState",
    "format_leases",
    "format_processes",
    "format_services",
    "format_stream",
    "lease_of",
    "leases_of",
    "run_status",
    "status_document",
]


def _cell(text: str, width: int) -> str:
    """``text`` left-aligned in ``width`` columns, with at least one space after it."""
    return f"{text:<{width - 1}} "


def format_services(instances: Mapping[str, Sequence[InstanceStatus]]) -> str:
    """One line per instance of each service (``instances``: by service name, in order; empty
    for a service none of whose instances answers, shown ``DOWN``): service, ``ok``, instance
    id, node, version, ping latency, role (``leader``/``standby``) and projection: ``ok``,
    ``N FAILED`` for an instance whose read models failed to project N stored events (a ``!``
    line under the table says what to do), or ``-`` when the instance did not tell.
    """
    widths = (22, 7, 24, 10, 10)
    head = ("SERVICE", "STATUS", "INSTANCE", "NODE", "VERSION")
    lines = ["".join(map(_cell, head, widths)) + f"{'LATENCY':>9}  {'ROLE':<9}PROJECTION"]
    failing: list[tuple[InstanceStatus, int]] = []
    for name, rows in instances.items():
        if not rows:
            line = "".join(map(_cell, (name, "DOWN", "-", "-", "-"), widths))
            lines.append(line + f"{'-':>9}  {'-':<9}-")
        for row in rows:
            cells = (name, "ok", row.instance, row.node, row.version)
            latency = f"{row.latency_ms:.1f} ms"
            projection = "-"
            if row.health is not None:
                failures = row.health.projection_failures
                projection = f"{failures} FAILED" if failures else "ok"
                if failures:
                    failing.append((row, failures))
            line = "".join(map(_cell, cells, widths)) + f"{latency:>9}  {row.role:<9}{projection}"
            lines.append(line)
    lines.extend(
        f"! {row.service} ({row.instance}): {count} stored event{'s' if count != 1 else ''} "
        "failed to project into its read models (logged as 'read-model projection failed'); "
        f"its queries may be wrong until it is fixed and restarted. Check with "
        f"`clipyard replay {row.service} --verify`."
        for row, count in failing
    )
    return "\n".join(lines)


@dataclass(frozen=True)
class Lease:
    """Who holds a service's lease, as its instances tell."""

    service: str
    holder: str | None
    """The instance leading (``None``: none that answers says it leads, and none names one)."""
    token: int | None = None
    """The lease's fencing token, as its holder tells."""
    note: str = ""
    """What is off: the holder does not answer, none holds it, two claim it..."""
    alarm: str = ""
    """A ``!`` line for two instances claiming the lease at once."""


def lease_of(service: str, instances: Sequence[InstanceStatus]) -> Lease:
    """Who holds ``service``'s lease: the instance answering as ``leader``; else the one a
    standby names (``not answering`` when it is not among those answering); two claiming it at
    once (a fenced lease lets only the newest token write) are flagged."""
    if not instances:
        return Lease(service, None, note="no instance answers")
    told = [row for row in instances if row.health is not None and row.health.role]
    if not told:
        return Lease(service, None, note="its instances do not tell (an older version?)")
    leaders = sorted(
        (row for row in told if row.role == "leader"),
        key=lambda row: -1 if row.health is None else row.health.lease_token or -1,
        reverse=True,
    )
    if leaders:
        first, *others = leaders
        token = first.health.lease_token if first.health else None
        if not others:
            return Lease(service, first.instance, token)
        claims = [f"{row.instance} (token {_token(row)})" for row in leaders]
        return Lease(
            service,
            first.instance,
            token,
            note=f"! {len(leaders)} CLAIM IT: also " + ", ".join(claims[1:]),
            alarm=(
                f"! {service}: {len(leaders)} instances claim its lease at once: "
                f"{', '.join(claims)}. The store's fence takes writes under the newest token "
                f"only; {', '.join(row.instance for row in others)} should step down at its next "
                "renewal: if it does not, stop it."
            ),
        )
    named = sorted({row.health.leader for row in told if row.health and row.health.leader})
    if not named:
        return Lease(service, None, note="free: no instance holds it now")
    answering = {row.instance for row in instances}
    if set(named) & answering:
        return Lease(service, ", ".join(named), note="changing hands (it answers as standby)")
    seen = ", ".join(row.instance for row in told if row.health and row.health.leader)
    return Lease(service, ", ".join(named), note=f"not answering (named by standby {seen})")


def leases_of(service: str, instances: Sequence[InstanceStatus]) -> list[Lease]:
    """``service``'s lease (:func:`lease_of`), then each other lease its instances say they
    hold (``workspace-realizer host:local``), by name; two holders of one are flagged."""
    rows = [lease_of(service, instances)]
    held: dict[str, list[tuple[str, int]]] = {}
    for row in instances:
        for name, token in (row.health.other_leases if row.health else {}).items():
            held.setdefault(name, []).append((row.instance, token))
    for name, holders in sorted(held.items()):
        (instance, token), *others = sorted(holders, key=lambda pair: -pair[1])
        note = f"! also claimed by {', '.join(i for i, _ in others)}" if others else ""
        rows.append(Lease(f"{service} {name}", instance, token, note=note))
    return rows


def _token(row: InstanceStatus) -> str:
    token = row.health.lease_token if row.health else None
    return "?" if token is None else str(token)


def format_leases(leases: Sequence[Lease]) -> str:
    """One line per service: the instance holding its lease, its fencing token, and what is off;
    a ``!`` line under the table for each service whose lease two instances claim."""
    width = max([22, *(len(lease.service) + 2 for lease in leases)])
    lines = [f"{'LEASE':<{width}}{'HELD BY':<24}{'TOKEN':>6}  NOTE".rstrip()]
    for lease in leases:
        token = "-" if lease.token is None else str(lease.token)
        holder = _cell(lease.holder or "-", 24)
        lines.append(f"{lease.service:<{width}}{holder}{token:>6}  {lease.note}".rstrip())
    lines.extend(lease.alarm for lease in leases if lease.alarm)
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


async def run_status(
    env: Mapping[str, str], out: TextIO | None = None, *, as_json: bool = False
) -> int:
    """Print the stack's status (``as_json``: one JSON object, :func:`status_document`).

    The processes of a running ``clipyard up`` are printed even when NATS does not answer
    (then the connection error follows).

    Returns:
        0 when every service has an instance answering, 1 otherwise.
    """
    out = sys.stdout if out is None else out
    login = login_from_env(env)
    processes = _processes(env)
    try:
        nc = await connect_cli(login)
    except NatsConnectError as error:
        if as_json:
            document = _camel(
                msgspec.to_builtins(
                    {"ok": False, "error": str(error), "processes": dict(_process_records(env))}
                )
            )
            print(msgspec.json.encode(document).decode(), file=out, flush=True)
        elif processes:
            print(processes, file=out, flush=True)
        raise
    try:
        names = [SERVICE_NAMES[token] for token in SERVICES]
        found = await asyncio.gather(*(service_instances(nc, name) for name in names))
        state = await read_stream_state(nc.jetstream())
        version = nc.connected_server_version
        server = f"{version.major}.{version.minor}.{version.patch}"
        reached = nc.connected_url
        url = f"{reached.scheme}://{reached.hostname}:{reached.port}" if reached else "?"
    finally:
        await nc.close()
    instances = dict(zip(names, found, strict=True))
    leases = [lease for name, rows in instances.items() for lease in leases_of(name, rows)]
    servers = [one.shown for one in parse_nats_urls(login.url)]
    if as_json:
        nats = {
            "version": server,
            "reached": url,
            "servers": servers,
            "external": nats_external(env),
        }
        document = status_document(instances, leases, nats, state, _process_records(env))
        print(msgspec.json.encode(document).decode(), file=out, flush=True)
        return 0 if all(found) else 1
    print(format_services(instances), file=out)
    print(file=out)
    print(format_leases(leases), file=out)
    print(file=out)
    shown = format_stream(server, url, state, servers=servers, external=nats_external(env))
    print(shown, file=out, flush=True)
    if processes:
        print(file=out)
        print(processes, file=out, flush=True)
    return 0 if all(found) else 1


def status_document(
    instances: Mapping[str, Sequence[InstanceStatus]],
    leases: Sequence[Lease],
    nats: Mapping[str, object],
    stream: StreamState | None,
    processes: Mapping[str, ProcessRecord],
) -> object:
    """``clipyard status --json``: ``{"ok", "services": {name: [instance]}, "leases",
    "nats", "stream", "processes"}`` (plain data; ``ok``: every service has an instance
    answering; keys in camelCase throughout, as the API's)."""
    return _camel(
        msgspec.to_builtins(
            {
                "ok": all(instances.values()),
                "services": {name: list(rows) for name, rows in instances.items()},
                "leases": list(leases),
                "nats": dict(nats),
                "stream": stream,
                "processes": dict(processes),
            }
        )
    )


_DATA_KEYED: Final = frozenset({"services", "processes", "otherLeases"})
"""Maps whose keys are data (service and process names, lease names such as ``host:node_1``):
their keys stay as they are."""


def _camel(value: object, *, data_keys: bool = False) -> object:
    """``value`` with every field name in ``camelCase`` (``snake_case`` keys of the dataclasses
    turned, the keys of :data:`_DATA_KEYED` maps kept as they are; values untouched)."""
    if isinstance(value, dict):
        turned = {}
        for key, item in value.items():
            name = str(key) if data_keys else _camel_key(str(key))
            turned[name] = _camel(item, data_keys=name in _DATA_KEYED and not data_keys)
        return turned
    if isinstance(value, list):
        return [_camel(item) for item in value]
    return value


def _camel_key(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _process_records(env: Mapping[str, str]) -> Mapping[str, ProcessRecord]:
    """The running ``clipyard up``'s process records (none when none runs with this home)."""
    home = resolve_home(env)
    return read_records(home) if lock_holder(home) is not None else {}


def _processes(env: Mapping[str, str]) -> str:
    """The running ``clipyard up``'s processes, or empty when none runs with this home."""
    home = resolve_home(env)
    up_pid = lock_holder(home)
    records = read_records(home) if up_pid is not None else {}
    return format_processes(up_pid, records, time.time()) if up_pid and records else ""
