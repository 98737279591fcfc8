"""A drain's requests to the rest of Clipyard (:class:`~workspace_realizer.usecases.ports.NodeMoves`
over the bus): the node registry (which nodes are ready, mark one draining), the supervisors
(stop a workspace's services here, start them on the node it moved to) and the receiving node's
realizer host part (``ws.cmd.workspace.move_in.<node>``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import contracts.workspace_subjects as subjects
from contracts.base import Actor, Principal
from contracts.drains import (
    NODE_MARK_DRAINING,
    MarkNodeDraining,
    MoveInResult,
    MoveInWorkspaces,
    move_in,
)
from contracts.execution_commands import (
    StopWorkspaceRuntimeServices,
    StopWorkspaceRuntimeServicesResult,
)
from contracts.nodes import NODE_LIST, ListNodes, NodeView
from contracts.runtime_commands import ControlRuntime, RealizerFacts
from contracts.runtime_subjects import runtime_control
from natsbus.client import BusClient, BusRequestError, OperationAccepted
from workspace_realizer.settings import SERVICE_NAME

if TYPE_CHECKING:
    from servicekit import ServiceRuntime

__all__ = ["MOVE_IN_TIMEOUT", "BusMoves"]

MOVE_IN_TIMEOUT = 900.0
"""Seconds the drained node waits for the receiving one to clone and rebuild a project
workspace's worktrees."""
_STOP_TIMEOUT = 60.0


def _system(company_id: str | None) -> Principal:
    return Principal(company_id=company_id, actor=Actor(type="system", id=SERVICE_NAME))


class BusMoves:
    """:class:`~workspace_realizer.usecases.ports.NodeMoves` over ``runtime``'s bus."""

    def __init__(self, runtime: ServiceRuntime) -> None:
        self.client = BusClient(runtime.nc)
        self.node = runtime.settings.node_id

    async def nodes(self) -> list[NodeView]:
        """Every registered node, with which of its processes answer."""
        query = ListNodes(principal=_system(None), parts=True)
        return await self.client.call(NODE_LIST, query, list[NodeView], timeout=10.0)

    async def mark_draining(self, node: str, reason: str | None) -> None:
        """Have the registry record ``node`` as draining."""
        command = MarkNodeDraining(principal=_system(None), node_id=node, reason=reason)
        await self.client.call(NODE_MARK_DRAINING, command, NodeView, timeout=10.0)

    async def stop_services(
        self, company_id: str, workspace_id: str, generation: int, reason: str
    ) -> list[str]:
        """Stop the workspace's runtime services on this node; the workspace command ids of
        those stopped.

        Raises:
            RuntimeError: The supervisor did not confirm they all stopped.
        """
        request = StopWorkspaceRuntimeServices(
            principal=_system(company_id),
            workspace_id=workspace_id,
            lifecycle_generation=generation,
            reason=reason,
        )
        subject = subjects.stop_workspace_runtime_services(self.node)
        result = await self.client.call(
            subject, request, StopWorkspaceRuntimeServicesResult, timeout=_STOP_TIMEOUT
        )
        if result.failed:
            raise RuntimeError(f"still running: {', '.join(result.failed)}")
        return list(result.stopped_commands)

    async def start_services(
        self, company_id: str, workspace_id: str, commands: list[str], node: str
    ) -> tuple[list[str], list[str]]:
        """Start the workspace's services ``commands`` on ``node`` (where it now is):
        ``(started, warnings)``."""
        started: list[str] = []
        warnings: list[str] = []
        for command_id in commands:
            request = ControlRuntime(
                principal=_system(company_id),
                workspace_id=workspace_id,
                action="start",
                workspace_command_id=command_id,
                realizer_facts=RealizerFacts(node_id=node),
            )
            try:
                await self.client.call(runtime_control(node), request, dict, timeout=120.0)
            except OperationAccepted:
                pass  # still starting: it shows on the workspace's services
            except BusRequestError as exc:
                warnings.append(f"runtime service {command_id} did not start: {exc.reply.message}")
                continue
            started.append(command_id)
        return started, warnings

    async def move_in(self, node: str, command: MoveInWorkspaces) -> MoveInResult:
        """Ask ``node``'s realizer host part to take the project workspace and rebuild its
        worktrees."""
        return await self.client.call(move_in(node), command, MoveInResult, timeout=MOVE_IN_TIMEOUT)
