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
from heartbeat_controller.endpoints.hooks import OnAgentDeleted, OnWake, call_hook

if TYPE_CHECKING:
    from contracts.workspace_views import Page
    from heartbeat_controller.application import HeartbeatControllerApplication
    from natsbus import RequestContext
    from servicekit import ServiceRuntime

__all__ = ["register_agents"]


async def register_agents(
    runtime: ServiceRuntime,
    *,
    on_wake: OnWake | None = None,
    on_agent_deleted: OnAgentDeleted | None = None,
) -> None:
    """Add the agent and wake endpoints to the service.

    Args:
        runtime: The running service (its application is a ``HeartbeatControllerApplication``).
        on_wake: Awaited with the answer after each accepted wake.
        on_agent_deleted: Awaited after an agent's delete with the ids of its running runs,
            now cancel-requested (its queued runs ended ``cancelled`` in the delete).
    """
    app = cast("HeartbeatControllerApplication", runtime.app)

    async def create(c: CreateAgent, ctx: RequestContext) -> AgentView:
        return await runtime.store(app.create_agent, c.principal, c)

    async def update(c: UpdateAgent, ctx: RequestContext) -> AgentView:
        return await runtime.store(app.update_agent, c.principal, c)

    async def delete(c: DeleteAgent, ctx: RequestContext) -> None:
        running = await runtime.store(app.delete_agent, c.principal, c.agent_id)
        await call_hook(on_agent_deleted, running)

    async def get(q: GetAgent, ctx: RequestContext) -> AgentView:
        return await runtime.store(app.get_agent, q.principal, q.agent_id)

    async def list_(q: ListAgents, ctx: RequestContext) -> Page[AgentView]:
        return await runtime.store(app.list_agents, q.principal, q.limit, q.offset)

    async def wake(c: WakeAgent, ctx: RequestContext) -> WakeAccepted:
        accepted = await runtime.store(app.wake, c.principal, c)
        await call_hook(on_wake, accepted)
        return accepted

    service = runtime.service
    await service.add_endpoint("agent_create", AGENT_CREATE, create, CreateAgent)
    await service.add_endpoint("agent_update", AGENT_UPDATE, update, UpdateAgent)
    await service.add_endpoint("agent_delete", AGENT_DELETE, delete, DeleteAgent)
    await service.add_endpoint("agent_get", AGENT_GET, get, GetAgent)
    await service.add_endpoint("agent_list", AGENT_LIST, list_, ListAgents)
    await service.add_endpoint("agent_wake", AGENT_WAKE, wake, WakeAgent)
