"""The ``clipyard`` command: argument parsing and dispatch, nothing else."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence

from clipyard_cli.api import ApiError, api_client
from clipyard_cli.audit import run_audit
from clipyard_cli.clusterprocs import DEFAULT_HTTP_PORT, DEFAULT_NATS_PORT
from clipyard_cli.clusterup import run_cluster_up
from clipyard_cli.compose import run_compose_env
from clipyard_cli.down import run_down
from clipyard_cli.drain import run_drain, run_undrain
from clipyard_cli.events import run_tail
from clipyard_cli.home import HomeError
from clipyard_cli.nodes import run_nodes
from clipyard_cli.replay import run_replay
from clipyard_cli.run import run_service
from clipyard_cli.status import run_status
from clipyard_cli.up import run_up
from clipyard_cli.usercmds import run_user_command
from clipyard_cli.userparser import USER_COMMANDS, add_user_commands
from contracts.subjects import SERVICE_NAMES, SERVICES
from natsbus.connection import NatsConnectError

__all__ = ["build_parser", "main"]

_SERVICE_CHOICES = ", ".join(f"{SERVICE_NAMES[t]} ({t})" for t in SERVICES)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="clipyard",
        description="Run and inspect a Clipyard stack. The operator commands (up, status, "
        "events, audit, replay, nodes) talk to the services over NATS; workspaces, runs and "
        "issues use the HTTP API (CLIPYARD_API_URL, CLIPYARD_API_KEY).",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log connection events")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    up = commands.add_parser(
        "up",
        help="start NATS and the five services; Ctrl-C stops everything",
        description="Start the embedded stack (ARCHITECTURE §7) in the foreground.",
    )
    up.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="SERVICE",
        help="do not start this service (run it yourself with `clipyard run SERVICE`); repeatable",
    )
    commands.add_parser("down", help="stop the stack `clipyard up` runs with this CLIPYARD_HOME")
    status = commands.add_parser("status", help="ping every service; show the event stream")
    status.add_argument("--json", action="store_true", help="print the status as one JSON object")
    nodes = commands.add_parser("nodes", help="the worker nodes: state, parts, capacity")
    nodes.add_argument("--json", action="store_true", help="print them as JSON")
    node_commands = nodes.add_subparsers(dest="nodes_command", metavar="ACTION")
    drain = node_commands.add_parser(
        "drain", help="move a node's idle repo-only workspaces to the other nodes"
    )
    drain.add_argument("node", metavar="NODE", help="the node id (clipyard nodes lists them)")
    drain.add_argument("--reason", help="why, as its records carry it")
    drain.add_argument("--json", action="store_true", help="print the report as JSON")
    undrain = node_commands.add_parser("undrain", help="take a drained node back")
    undrain.add_argument("node", metavar="NODE", help="the node id")

    _add_events(commands)

    audit = commands.add_parser("audit", help="the stored history of one aggregate")
    audit.add_argument("aggregate_id", metavar="AGGREGATE_ID")
    audit.add_argument("--json", action="store_true", help="print the audit trail as JSON")

    replay = commands.add_parser(
        "replay", help="rebuild a service's read models from its store and compare"
    )
    replay.add_argument("service", metavar="SERVICE", help=f"one of {_SERVICE_CHOICES}")
    replay.add_argument(
        "--verify", action="store_true", required=True, help="compare with the live read models"
    )
    replay.add_argument("--json", action="store_true", help="print the report as JSON")

    run = commands.add_parser(
        "run", help="run one service in the foreground with the stack's settings"
    )
    run.add_argument("service", metavar="SERVICE", help=f"one of {_SERVICE_CHOICES}")

    commands.add_parser("compose-env", help="print fresh secrets for docker compose's .env")
    _add_cluster(commands)
    add_user_commands(commands)
    return parser


def _add_events(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``events tail``: the event stream, filtered (clipyard_cli/events.py)."""
    events = commands.add_parser("events", help="read the event stream")
    event_commands = events.add_subparsers(dest="events_command", required=True, metavar="ACTION")
    tail = event_commands.add_parser("tail", help="print events as they are published")
    tail.add_argument(
        "--type",
        dest="type_tag",
        action="append",
        metavar="T",
        help="only these events: a type (run.queued.v1), a type without version (run.queued) or "
        "an aggregate, the first part of a type (run); comma separated or repeated",
    )
    tail.add_argument(
        "--from-start", action="store_true", help="begin with the oldest stored event"
    )
    tail.add_argument(
        "--no-follow", dest="follow", action="store_false", help="stop once caught up"
    )
    tail.add_argument(
        "--json",
        action="store_true",
        help='one JSON object a line: {"sequence", "subject", "event"} (the event as published)',
    )


def _add_cluster(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``cluster up``: the replicated control plane on this machine (clipyard_cli/clusterup.py)."""
    cluster = commands.add_parser("cluster", help="a replicated control plane on this machine")
    actions = cluster.add_subparsers(dest="cluster_command", required=True, metavar="ACTION")
    up = actions.add_parser(
        "up",
        help="3 NATS nodes, PostgreSQL, 2 replicas of each service; Ctrl-C stops everything",
        description="Start a replicated Clipyard control plane on this machine in the foreground.",
    )
    up.add_argument(
        "--home", help="its CLIPYARD_HOME (default: $CLIPYARD_HOME or ~/.clipyard-cluster)"
    )
    up.add_argument(
        "--http-port",
        type=int,
        default=DEFAULT_HTTP_PORT,
        help=f"the first gateway's port; the second uses the next (default {DEFAULT_HTTP_PORT})",
    )
    up.add_argument(
        "--nats-port",
        type=int,
        default=DEFAULT_NATS_PORT,
        help=f"the first NATS node's client port; the others use the next two, routes +10, "
        f"monitoring +20 (default {DEFAULT_NATS_PORT})",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``clipyard`` command.

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).

    Returns:
        The process exit code.
    """
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR,
        format="clipyard: %(levelname)s %(name)s: %(message)s",
    )
    env = dict(os.environ)
    try:
        return _dispatch(args, env)
    except (HomeError, NatsConnectError, ValueError, ApiError) as exc:
        print(f"clipyard {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _dispatch(args: argparse.Namespace, env: dict[str, str]) -> int:
    if args.command in USER_COMMANDS:
        api = api_client(env)
        try:
            return run_user_command(api, args, env, sys.stdout)
        finally:
            api.close()
    match args.command:
        case "up":
            return asyncio.run(run_up(env, skip=args.skip))
        case "down":
            return run_down(env)
        case "status":
            return asyncio.run(run_status(env, as_json=args.json))
        case "nodes" if args.nodes_command == "undrain":
            return asyncio.run(run_undrain(env, args.node))
        case "nodes" if args.nodes_command == "drain":
            return asyncio.run(run_drain(env, args.node, reason=args.reason, as_json=args.json))
        case "nodes":
            return asyncio.run(run_nodes(env, as_json=args.json))
        case "events":
            return asyncio.run(
                run_tail(
                    env,
                    type_tag=args.type_tag,
                    from_start=args.from_start,
                    follow=args.follow,
                    as_json=args.json,
                )
            )
        case "audit":
            return asyncio.run(run_audit(env, args.aggregate_id, as_json=args.json))
        case "replay":
            return asyncio.run(run_replay(env, args.service, as_json=args.json))
        case "run":
            return run_service(env, args.service)
        case "compose-env":
            return run_compose_env()
        case "cluster":
            return asyncio.run(
                run_cluster_up(
                    env, home=args.home, http_port=args.http_port, nats_port=args.nats_port
                )
            )
    raise AssertionError(f"unhandled command {args.command!r}")  # pragma: no cover
