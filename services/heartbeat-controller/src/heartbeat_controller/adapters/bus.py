"""The run's ports over the bus: the realizer, the supervisor of this node and the gateway
(the Protocols of :mod:`heartbeat_controller.orchestration.ports`).

A long command answered ``accepted {operationId}`` (realize, run services) is waited for by
polling the owner's ``ws.qry.<service>.operation`` until it finishes; its ``result`` is what the
synchronous call would have returned. Nothing here logs a message body: ``LaunchAdapter`` and the
reply to ``MintRunToken`` hold the run token.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, TypeVar

import msgspec

from contracts import heartbeat_subjects as hs
from contracts.base import Accepted, ErrorReply, Principal
from contracts.errors import ErrorCode
from contracts.execution_commands import RealizeWorkspace
from contracts.execution_views import RealizeResult
from contracts.run_tokens import MintRunToken, RunTokenIssued
from contracts.runtime_commands import EnsureRunServices, RunServices
from contracts.runtime_subjects import ensure_run_services
from contracts.service import GetOperation, OperationView
from contracts.slots import (
    AcquireSlot,
    AdapterLaunched,
    GetRunSlot,
    KillAdapter,
    LaunchAdapter,
    ReleaseSlot,
    RunSlot,
    SlotGrant,
)
from contracts.subjects import ServiceToken, service_query
from contracts.workspace_subjects import realize_workspace
from heartbeat_controller.orchestration.ports import PortError, RunPorts
from natsbus import BusClient, BusRequestError, OperationAccepted

__all__ = ["BusGateway", "BusRealizer", "BusSupervisor", "bus_ports"]

T = TypeVar("T")

REQUEST_TIMEOUT = 110.0
"""Seconds a long command may take before it is answered ``accepted`` (the services' own)."""
SHORT_TIMEOUT = 15.0
"""Seconds for the quick slot commands and the token mint."""
OPERATION_WAIT = 6 * 3600.0
"""Seconds an accepted operation is polled at most (a realize clones, provisions)."""


def _error(reply: ErrorReply) -> PortError:
    return PortError(reply.code, reply.message, reply.status, **(reply.details or {}))


async def _call(
    bus: BusClient,
    subject: str,
    message: Any,
    result_type: type[T],
    *,
    timeout: float,
    owner: ServiceToken | None = None,
    poll: float = 0.25,
) -> T:
    """``bus.call``; an ``accepted`` reply is followed on ``owner``'s operation query."""
    try:
        answer: T = await bus.call(subject, message, result_type, timeout=timeout)
    except BusRequestError as exc:
        raise _error(exc.reply) from None
    except OperationAccepted as accepted:
        if owner is None:
            raise PortError(
                ErrorCode.INTERNAL, f"{subject} answered accepted unexpectedly"
            ) from None
        principal: Principal = message.principal
        return await _await_operation(
            bus, owner, accepted.operation_id, principal, result_type, poll
        )
    return answer


async def _await_operation(
    bus: BusClient,
    owner: ServiceToken,
    operation_id: str,
    principal: Principal,
    result_type: type[T],
    poll: float,
) -> T:
    """Poll ``ws.qry.<owner>.operation`` until the operation ends; its result or its error."""
    subject = service_query(owner, "operation")
    query = GetOperation(principal=principal, operation_id=operation_id)
    deadline = time.monotonic() + OPERATION_WAIT
    delay = poll
    while time.monotonic() < deadline:
        try:
            view = await bus.call(subject, query, OperationView, timeout=SHORT_TIMEOUT)
        except BusRequestError as exc:
            if exc.code not in ("timeout", "service_unavailable"):
                raise _error(exc.reply) from None
        else:
            if view.status == "succeeded":
                result: T = msgspec.convert(view.result, result_type)
                return result
            if view.status == "failed":
                error = view.error
                raise PortError(
                    (error.code if error is not None else "") or "internal",
                    (error.message if error is not None else "")
                    or f"operation {operation_id} failed",
                    operationId=operation_id,
                )
        await asyncio.sleep(delay)
        delay = min(delay * 1.5, 2.0)
    raise PortError(ErrorCode.TIMEOUT, f"operation {operation_id} did not finish")


class BusRealizer:
    """The realizer over the bus (``ws.cmd.workspace.realize.<node>``)."""

    def __init__(self, bus: BusClient, node: str, *, poll: float = 0.25) -> None:
        self._bus = bus
        self._subject = realize_workspace(node)
        self._poll = poll

    async def realize(self, command: RealizeWorkspace) -> RealizeResult:
        """See :meth:`RealizerPort.realize`."""
        return await _call(
            self._bus,
            self._subject,
            command,
            RealizeResult,
            timeout=REQUEST_TIMEOUT,
            owner="realizer",
            poll=self._poll,
        )


class BusSupervisor:
    """The supervisors over the bus: each call goes to the node it names, else to ``node``
    (this controller's own)."""

    def __init__(self, bus: BusClient, node: str, *, poll: float = 0.25) -> None:
        self._bus = bus
        self._node = node
        self._poll = poll

    async def ensure_run_services(
        self, command: EnsureRunServices, node: str | None = None
    ) -> RunServices:
        """See :meth:`SupervisorPort.ensure_run_services`."""
        return await _call(
            self._bus,
            ensure_run_services(node or self._node),
            command,
            RunServices,
            timeout=REQUEST_TIMEOUT,
            owner="supervisor",
            poll=self._poll,
        )

    async def acquire_slot(self, command: AcquireSlot, node: str | None = None) -> SlotGrant:
        """See :meth:`SupervisorPort.acquire_slot`."""
        subject = hs.acquire_slot(node or self._node)
        return await _call(self._bus, subject, command, SlotGrant, timeout=SHORT_TIMEOUT)

    async def launch_adapter(
        self, command: LaunchAdapter, node: str | None = None
    ) -> AdapterLaunched:
        """See :meth:`SupervisorPort.launch_adapter`."""
        subject = hs.launch_adapter(node or self._node)
        return await _call(self._bus, subject, command, AdapterLaunched, timeout=60.0)

    async def kill_adapter(self, command: KillAdapter, node: str | None = None) -> RunSlot:
        """See :meth:`SupervisorPort.kill_adapter`."""
        subject = hs.kill_adapter(node or self._node)
        return await _call(self._bus, subject, command, RunSlot, timeout=60.0)

    async def release_slot(self, command: ReleaseSlot, node: str | None = None) -> None:
        """See :meth:`SupervisorPort.release_slot`."""
        subject = hs.release_slot(node or self._node)
        reply = await self._bus.request(subject, command, timeout=60.0)
        if isinstance(reply, ErrorReply):
            raise _error(reply)
        if isinstance(reply, Accepted):
            raise PortError(ErrorCode.INTERNAL, "the slot release was answered accepted")

    async def get_run_slot(self, command: GetRunSlot) -> RunSlot | None:
        """See :meth:`SupervisorPort.get_run_slot`."""
        try:
            return await _call(self._bus, hs.SLOT_OF_RUN, command, RunSlot, timeout=SHORT_TIMEOUT)
        except PortError as exc:
            if exc.code == "not_found":
                return None
            raise


class BusGateway:
    """The gateway over the bus (``RUN_TOKEN_MINT``)."""

    def __init__(self, bus: BusClient) -> None:
        self._bus = bus

    async def mint_run_token(self, command: MintRunToken) -> RunTokenIssued:
        """See :meth:`GatewayPort.mint_run_token`."""
        return await _call(
            self._bus, hs.RUN_TOKEN_MINT, command, RunTokenIssued, timeout=SHORT_TIMEOUT
        )


def bus_ports(bus: BusClient, node: str) -> RunPorts:
    """The real ports over ``bus`` for the services of ``node``."""
    return RunPorts(
        realizer=BusRealizer(bus, node),
        supervisor=BusSupervisor(bus, node),
        gateway=BusGateway(bus),
    )
