"""What the orchestrators (realize, archive, reopen, clone, reaper) and the endpoints work with:
the application, the store's thread, the host ports, the agents' owner, and this node's
settings."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from workspace_realizer.orchestration.locks import KeyedLocks
from workspace_realizer.orchestration.steps import StepRecorder
from workspace_realizer.usecases.references import AgentDirectory, NoAgentDirectory

if TYPE_CHECKING:
    from contracts.drains import MoveInResult, MoveInWorkspaces
    from contracts.nodes import NodeView
    from workspace_realizer.adapters.host import HostPorts
    from workspace_realizer.application import WorkspaceRealizerApplication

__all__ = ["NodeMoves", "Realizer", "StopServices", "Store"]

Store = Callable[..., Awaitable[Any]]
"""Runs a synchronous call on the store's thread (``ServiceRuntime.store``)."""

StopServices = Callable[[str, str, int], Awaitable[int]]
"""``stop(company_id, workspace_id, generation)`` asks the supervisor to stop a workspace's
runtime services; returns how many it stopped; raises when it could not."""


class NodeMoves(Protocol):
    """What a drain asks of the rest of Clipyard (docs/scale-out.md, "Draining a node")."""

    async def nodes(self) -> list[NodeView]:
        """Every registered node, with which of its processes answer."""
        ...

    async def mark_draining(self, node: str, reason: str | None) -> None:
        """Have the registry record ``node`` as draining."""
        ...

    async def stop_services(
        self, company_id: str, workspace_id: str, generation: int, reason: str
    ) -> list[str]:
        """Stop the workspace's runtime services here; the command ids of those stopped."""
        ...

    async def start_services(
        self, company_id: str, workspace_id: str, commands: list[str], node: str
    ) -> tuple[list[str], list[str]]:
        """Start them on ``node``: ``(started, warnings)``."""
        ...

    async def move_in(self, node: str, command: MoveInWorkspaces) -> MoveInResult:
        """Have ``node``'s host part take a project workspace and rebuild its worktrees."""
        ...


@dataclass
class Realizer:
    """The realizer's orchestration context (one per running service; tests build their own)."""

    app: WorkspaceRealizerApplication
    store: Store
    ports: HostPorts
    home: Path
    stop_services: StopServices
    node_id: str = "local"
    command_timeout: float = 600.0
    reaper_cooldown: timedelta = timedelta(days=7)
    service_name: str = "workspace-realizer"
    locks: KeyedLocks = field(default_factory=KeyedLocks)
    agents: AgentDirectory = field(default_factory=NoAgentDirectory)
    """Asked which company an agent belongs to when the realizer's copy does not know it."""
    moves: NodeMoves | None = None
    """A drain's requests (None: this realizer cannot drain, as in tests of one host)."""

    def recorder(self, **context: Any) -> StepRecorder:
        """A step sink recording into this realizer (``company_id``, ``workspace_id``,
        ``project_workspace_id``, ``issue_id``, ``operation_id``); its steps name this node."""
        return StepRecorder(self.app, self.store, self.home, node_id=self.node_id, **context)
