"""``clipyard replay <service> --verify``: rebuild a service's read models and compare.

Each instance of the service (``ws.qry.<token>.replay_verify.<micro id>``) rebuilds its read
models from the store in a fresh application and compares them with its live ones. Exit code 1
when any instance's differ.
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
from natsbus.instances import ping_instances

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
    """Ask every instance of ``service`` to verify its replay and print each report.

    Each replica keeps read models of its own (following the shared store), so each is asked on
    its own subject (``…replay_verify.<micro id>``); an instance of an older build that has no
    such subject is asked through the service's subject.

    Returns:
        0 when every instance's read models match, 1 when any differ, 2 when none answered.
    """
    out = sys.stdout if out is None else out
    token = resolve_service(service)
    nc = await connect_cli(login_from_env(env))
    client = BusClient(nc)
    reports: list[tuple[str, ReplayReport]] = []
    try:
        subject = service_query(token, "replay_verify")
        instances = await ping_instances(nc, SERVICE_NAMES[token])
        targets = [(i.instance, f"{subject}.{i.id}") for i in instances] or [("", subject)]
        for instance, target in targets:
            reports.append((instance, await _verify(client, token, target, subject)))
    except BusRequestError as exc:
        print(f"clipyard replay: {SERVICE_NAMES[token]}: {exc.code}: {exc}", file=sys.stderr)
        return 2
    finally:
        await nc.close()
    for instance, report in reports:
        if as_json:
            print(msgspec.json.encode(report).decode(), file=out)
            continue
        if len(reports) > 1:
            print(f"instance {instance}:", file=out)
        print(format_report(report), file=out)
    return 0 if all(report.ok for _, report in reports) else 1


async def _verify(
    client: BusClient, token: ServiceToken, target: str, fallback: str
) -> ReplayReport:
    """One instance's report (``fallback``, the service's subject, when it has no own one)."""
    for subject in dict.fromkeys((target, fallback)):
        try:
            return await client.call(
                subject, VerifyReplay(principal=CLI_PRINCIPAL), ReplayReport, timeout=REPLAY_TIMEOUT
            )
        except OperationAccepted as accepted:
            return await _await_operation(client, token, accepted.operation_id)
        except BusRequestError as exc:
            if subject == fallback or exc.code != ErrorCode.SERVICE_UNAVAILABLE:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


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
