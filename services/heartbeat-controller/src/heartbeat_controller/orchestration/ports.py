"""What a run asks of other services (realizer, supervisor, gateway): the Protocols the runner
uses. Their implementations over the bus are :mod:`heartbeat_controller.adapters.bus`.

Every port takes the command as the contract defines it (the principal inside) and answers the
contract's result, or raises :class:`PortError` with the error reply's code and message. A long
command answered ``accepted {operationId}`` (realize, run services) is waited for by the port
until it finishes; its ``result`` is what the synchronous call would have returned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from contracts.base import Actor, Principal
from contracts.errors import status_of
from contracts.execution_commands import RealizeWorkspace
from contracts.execution_views import RealizeResult
from contracts.run_tokens import MintRunToken, RunTokenIssued
from contracts.runtime_commands import EnsureRunServices, RunServices
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

__all__ = [
    "CONTROLLER_ACTOR",
    "GatewayPort",
    "PortError",
    "RealizerPort",
    "RunPorts",
    "SupervisorPort",
    "run_principal",
]

CONTROLLER_ACTOR = Actor(type="system", id="heartbeat-controller")
"""Who the controller is when it acts for a run."""


class PortError(Exception):
    """Another service refused or failed a run's request (its error reply; ``status`` is the
    reply's, else the error catalogue's for ``code``)."""

    def __init__(self, code: str, message: str, status: int | None = None, **details: Any) -> None:
        super().__init__(message)
        self.code = str(code)
        self.message = message
        self.status = status_of(code) if status is None else status
        self.details = details


def run_principal(company_id: str, run_id: str, issue_id: str | None) -> Principal:
    """The principal of the controller's requests for one run."""
    return Principal(
        company_id=company_id, actor=CONTROLLER_ACTOR, run_id=run_id, issue_id=issue_id
    )


class RealizerPort(Protocol):
    """The workspace-realizer, as a run needs it."""

    async def realize(self, command: RealizeWorkspace) -> RealizeResult:
        """Realize (or reuse) the issue's workspace; waits for an accepted operation."""
        ...


class SupervisorPort(Protocol):
    """The runtime-supervisors: run services and adapter slots. ``node`` is the worker node of
    the run's workspace (docs/scale-out.md, "Worker nodes"), where its services and adapter
    run; None: this controller's own (a run without a workspace, or one recovered before it
    knew; that supervisor sends the request on to the node of the run's slot)."""

    async def ensure_run_services(
        self, command: EnsureRunServices, node: str | None = None
    ) -> RunServices:
        """Start or reuse the workspace's ``running`` services, leased to the run."""
        ...

    async def acquire_slot(self, command: AcquireSlot, node: str | None = None) -> SlotGrant:
        """A slot for the run (``PortError`` ``slot_unavailable`` while the pool is full)."""
        ...

    async def launch_adapter(
        self, command: LaunchAdapter, node: str | None = None
    ) -> AdapterLaunched:
        """Start the run's adapter in its slot."""
        ...

    async def kill_adapter(self, command: KillAdapter, node: str | None = None) -> RunSlot:
        """Kill the run's adapter's process group."""
        ...

    async def release_slot(self, command: ReleaseSlot, node: str | None = None) -> None:
        """Free the run's slot."""
        ...

    async def get_run_slot(self, command: GetRunSlot) -> RunSlot | None:
        """The run's slot, or None when the run never had one."""
        ...


class GatewayPort(Protocol):
    """The api-gateway: run tokens."""

    async def mint_run_token(self, command: MintRunToken) -> RunTokenIssued:
        """Mint the run's token (the clear token is in the answer only)."""
        ...


@dataclass(frozen=True)
class RunPorts:
    """Every port a run uses."""

    realizer: RealizerPort
    supervisor: SupervisorPort
    gateway: GatewayPort
