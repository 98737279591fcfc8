"""``clipyard cluster up``: a replicated control plane on this machine, in the foreground.

It refuses ports that are taken, starts a :class:`~clipyard_cli.clusterstack.ClusterStack` (which
takes the home's lock, ``run/up.lock`` as ``clipyard up`` does: one stack per home, and
``clipyard down`` with that home stops this one too), prints where everything is, then says
whenever a process exits (nothing restarts it) until SIGINT (Ctrl-C), SIGTERM or SIGHUP. Then it
stops every service, the NATS nodes, then PostgreSQL, leaving nothing running.
``CLIPYARD_READY_TIMEOUT`` (90 s) bounds the start.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final, TextIO

from clipyard_cli.clusterprocs import DEFAULT_HTTP_PORT, DEFAULT_NATS_PORT, ClusterPorts
from clipyard_cli.clusterservices import HOST_BOUND, REALIZER_PARTS, REPLICAS
from clipyard_cli.clusterstack import ClusterStack
from clipyard_cli.foreground import until_stopped
from clipyard_cli.home import admin_key_path, passwords_path
from clipyard_cli.probes import describe_exit
from clipyard_cli.stack import StackError
from contracts.subjects import SERVICE_NAMES
from servicekit.settings import env_seconds

__all__ = ["DEFAULT_CLUSTER_HOME", "banner", "cluster_home", "run_cluster_up"]

DEFAULT_CLUSTER_HOME: Final = "~/.clipyard-cluster"
_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_WATCH_EVERY: Final = 0.5


def cluster_home(given: str | None, env: Mapping[str, str]) -> Path:
    """``--home``, else ``$CLIPYARD_HOME``, else ``~/.clipyard-cluster``; absolute."""
    raw = given or env.get("CLIPYARD_HOME") or DEFAULT_CLUSTER_HOME
    return Path(raw).expanduser().resolve()


def banner(cluster: ClusterStack, *, key_source: str) -> str:
    """What ``clipyard cluster up`` prints once everything answers."""
    home = cluster.home
    gateways = "   ".join(f"{url}/api" for url in cluster.gateway_urls)
    replicated = ", ".join(
        f"{SERVICE_NAMES[t]} x{n}" for t, n in REPLICAS.items() if n > 1 and t != "realizer"
    )
    return "\n".join(
        [
            f"Clipyard cluster is up (ready in {cluster.ready_after:.1f} s).",
            f"  gateways:    {gateways}   (docs: {cluster.gateway_urls[0]}/api/docs)",
            f"  admin key:   {key_source}",
            f"  NATS:        {','.join(cluster.nats_urls)}",
            "               (3 nodes, WS_EVENTS at R3, routes log in as `route`; the users' "
            f"passwords are in {passwords_path(home)})",
            f"  PostgreSQL:  {cluster.postgres.shown_dsn}",
            "               (a role and schema per service; thrown away at stop, like the "
            "JetStream stores)",
            f"  services:    {replicated}; the workspace-realizer's company-wide part "
            f"x{REALIZER_PARTS.count('company')}; one each of {' and '.join(HOST_BOUND)}",
            "               (host-bound: they own this host's worktrees and processes)",
            f"  home:        {home}   (logs in {home / 'logs'})",
            f"  CLI:         CLIPYARD_HOME={home} CLIPYARD_NATS_URL={','.join(cluster.nats_urls)} "
            'CLIPYARD_NATS_PASSWORD=<"cli" of passwords.json> clipyard status',
            f"Press Ctrl-C to stop (or, elsewhere: CLIPYARD_HOME={home} clipyard down).",
        ]
    )


async def run_cluster_up(
    env: Mapping[str, str],
    *,
    home: str | None = None,
    http_port: int = DEFAULT_HTTP_PORT,
    nats_port: int = DEFAULT_NATS_PORT,
    out: TextIO | None = None,
) -> int:
    """Run the local cluster until SIGINT, SIGTERM or SIGHUP.

    Returns:
        0 after a requested stop, 1 when the cluster could not start.
    """
    out = sys.stdout if out is None else out
    where = cluster_home(home, env)
    try:
        ports = ClusterPorts.from_bases(http_port, nats_port)
        ports.require_free()
        ready_timeout = env_seconds(env, "CLIPYARD_READY_TIMEOUT", 90.0)
    except (StackError, ValueError) as exc:
        print(f"clipyard cluster up: {exc}", file=sys.stderr)
        return 1
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in _SIGNALS:
        loop.add_signal_handler(sig, stopping.set)
    cluster = ClusterStack(
        where,
        ports=ports,
        env={**env, "CLIPYARD_HOME": str(where)},
        out=out,
        ready_timeout=ready_timeout,
    )
    code = 1
    try:
        if await until_stopped(cluster.start(), stopping):
            source = "CLIPYARD_ADMIN_KEY" if env.get("CLIPYARD_ADMIN_KEY") else None
            print(banner(cluster, key_source=source or str(admin_key_path(where))), file=out)
            out.flush()
            await _watch(cluster, stopping)
        code = 0
    except (StackError, ValueError) as exc:
        print(f"clipyard cluster up: {exc}", file=sys.stderr, flush=True)
    finally:
        for sig in _SIGNALS:
            loop.remove_signal_handler(sig)
            signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C must not cut the stop short
        try:
            cluster.say("stopping")
            await cluster.stop()
            cluster.say("stopped: nothing of the cluster runs any more")
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGHUP, signal.SIG_DFL)
    return code


async def _watch(cluster: ClusterStack, stopping: asyncio.Event) -> None:
    """Say once of each process that exits (none is restarted), until ``stopping``."""
    told: set[int] = set()
    while not stopping.is_set():
        processes = [r.process for r in cluster.replicas if r.process is not None]
        if cluster.nats is not None:
            processes += [n.process for n in cluster.nats.nodes if n.process is not None]
        if cluster.postgres.process is not None:
            processes.append(cluster.postgres.process)
        for process in processes:
            if process.pid in told or process.alive():
                continue
            told.add(process.pid)
            cluster.say(
                f"{process.name} (pid {process.pid}) exited "
                f"({describe_exit(process.popen.returncode)}); nothing restarts it here "
                f"(its log: {process.log_path})"
            )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), _WATCH_EVERY)
