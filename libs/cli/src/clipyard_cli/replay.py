"""``clipyard replay <service> --verify``: rebuild a service's read models and compare.

The service (``ws.qry.<token>.replay_verify``) rebuilds its read models from its own store in a
fresh instance and compares them with the live ones. Exit code 1 when they differ.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Mapping
from typing import TextIO

import msgspec

from clipyard_cli.bus import CLI_PRINCIPAL, connect_cli, login_from_env
from clipyard_cli.stack import resolve_service
from contracts.base import ErrorReply
from contracts.errors import ErrorCode
from contracts.service import GetOperation, OperationView, ReplayReport, VerifyReplay
from contracts.subjects import SERVICE_NAMES, ServiceToken, service_query
from natsbus.client import BusClient, BusRequestError, OperationAccepted
from natsbus.errors import error_reply

__all__ = ["format_report", "run_replay"]

REPLAY_TIMEOUT = 110.0


def format_report(report: ReplayReport) -> str:
    """The verdict, what was replayed, and every difference."""
    verdict = "OK, read models match" if report.ok else f"{len(report.differences)} DIFFERENCES"
    models = ", ".join(report.read_models) or "none"
    lines = [
        f"replay of {report.service}: {verdict}",
        f"  {report.notifications_replayed} notifications replayed in {report.duration_ms:.1f} ms",
        f"  read models: {models}",
    ]
    lines.extend(f"  - {difference}" for difference in report.differences)
    return "\n".join(lines)


async def run_replay(
    env: Mapping[str, str], service: str, out: TextIO | None = None, *, as_json: bool = False
) -> int:
    """Ask ``service`` to verify its replay and print the report.

    Returns:
        0 when the read models match, 1 when they differ, 2 when the service did not answer.
    """
    out = sys.stdout if out is None else out
    token = resolve_service(service)
    nc = await connect_cli(login_from_env(env))
    client = BusClient(nc)
    try:
        subject = service_query(token, "replay_verify")
        try:
            report = await client.call(
                subject, VerifyReplay(principal=CLI_PRINCIPAL), ReplayReport, timeout=REPLAY_TIMEOUT
            )
        except OperationAccepted as accepted:
            report = await _await_operation(client, token, accepted.operation_id)
    except BusRequestError as exc:
        print(f"clipyard replay: {SERVICE_NAMES[token]}: {exc.code}: {exc}", file=sys.stderr)
        return 2
    finally:
        await nc.close()
    print(msgspec.json.encode(report).decode() if as_json else format_report(report), file=out)
    return 0 if report.ok else 1


async def _await_operation(
    client: BusClient, token: ServiceToken, operation_id: str
) -> ReplayReport:
    """Poll a long replay's operation until it finishes; its result is the report."""
    subject = service_query(token, "operation")
    deadline = time.monotonic() + 3600
    while time.monotonic() < deadline:
        view = await client.call(
            subject, GetOperation(principal=CLI_PRINCIPAL, operation_id=operation_id), OperationView
        )
        if view.status == "succeeded":
            return msgspec.convert(view.result, ReplayReport)
        if view.status == "failed":
            why = f"{view.error.code}: {view.error.message}" if view.error else "no error recorded"
            raise BusRequestError(
                subject, _failed(f"replay operation {operation_id} failed: {why}")
            )
        await asyncio.sleep(1.0)
    raise BusRequestError(subject, _failed(f"replay operation {operation_id} still runs"))


def _failed(message: str) -> ErrorReply:
    return error_reply(ErrorCode.INTERNAL, message)
