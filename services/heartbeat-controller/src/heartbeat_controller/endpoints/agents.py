"""Endpoints of agents and wakes: ``ws.cmd.agent.create|update|delete|wake`` and
``ws.qry.agent.get|list`` (API.md "Agents, wakes, runs")."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from contracts.agents import (
    AgentView,
    CreateAgent,
    DeleteAgent,
    GetAgent,
    ListAgents,
    UpdateAgent,
    WakeAccepted,
    WakeAgent,
)
from contracts.heartbeat_subjects import (
    AGENT_CREATE,
    AGENT_DELETE,
    AGENT_GET,
    AGENT_LIST,
    AGENT_UPDATE,
    AGENT_WAKE,
)
from heartbeat_controller.endpoints.common import OnAgentDeleted, OnWake, call_hook
from servicekit.routes import BusEndpoints, Route

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contracts.workspace_views import Page
    from heartbeat_controller.application import HeartbeatControllerApplication
    from natsbus import RequestContext
    from servicekit import ServiceRuntime

__all__ = ["AgentEndpoints"]


class AgentEndpoints(BusEndpoints):
    """The agent and wake endpoints, answered from the application on the store's thread.

    Args:
        runtime: The running service (its application is a ``HeartbeatControllerApplication``).
        on_wake: Awaited with the answer after each accepted wake.
        on_agent_deleted: Awaited after an agent's delete with the ids of its running runs,
            now cancel-requested (its queued runs ended ``cancelled`` in the delete).
    """

    def __init__(
        self,
        runtime: ServiceRuntime,
        *,
        on_wake: OnWake | None = None,
        on_agent_deleted: OnAgentDeleted | None = None,
    ) -> None:
        self._runtime = runtime
        self._app = cast("HeartbeatControllerApplication", runtime.app)
        self._on_wake = on_wake
        self._on_agent_deleted = on_agent_deleted

    async def create(self, c: CreateAgent, ctx: RequestContext) -> AgentView:
        """``ws.cmd.agent.create``."""
        return await self._runtime.store(self._app.create_agent, c.principal, c)

    async def update(self, c: UpdateAgent, ctx: RequestContext) -> AgentView:
        """``ws.cmd.agent.update``."""
        return await self._runtime.store(self._app.update_agent, c.principal, c)

    async def delete(self, c: DeleteAgent, ctx: RequestContext) -> None:
        """``ws.cmd.agent.delete``; its running runs are handed to ``on_agent_deleted``."""
        running = await self._runtime.store(self._app.delete_agent, c.principal, c.agent_id)
        await call_hook(self._on_agent_deleted, running)

    async def get(self, q: GetAgent, ctx: RequestContext) -> AgentView:
        """``ws.qry.agent.get``."""
        return await self._runtime.store(self._app.get_agent, q.principal, q.agent_id)

    async def list_(self, q: ListAgents, ctx: RequestContext) -> Page[AgentView]:
        """``ws.qry.agent.list``."""
        return await self._runtime.store(self._app.list_agents, q.principal, q.limit, q.offset)

    async def wake(self, c: WakeAgent, ctx: RequestContext) -> WakeAccepted:
        """``ws.cmd.agent.wake``; the answer is handed to ``on_wake``."""
        accepted = await self._runtime.store(self._app.wake, c.principal, c)
        await call_hook(self._on_wake, accepted)
        return accepted

    def routes(self) -> Sequence[Route]:
        """The agent and wake endpoints."""
        return (
            Route("agent_create", AGENT_CREATE, self.create, CreateAgent),
            Route("agent_update", AGENT_UPDATE, self.update, UpdateAgent),
            Route("agent_delete", AGENT_DELETE, self.delete, DeleteAgent),
            Route("agent_get", AGENT_GET, self.get, GetAgent),
            Route("agent_list", AGENT_LIST, self.list_, ListAgents),
            Route("agent_wake", AGENT_WAKE, self.wake, WakeAgent),
        )
