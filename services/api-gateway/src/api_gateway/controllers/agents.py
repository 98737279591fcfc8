"""Agents and their wakes: ``/api/companies/{companyId}/agents``, ``/api/agents/{agentId}`` and
``/api/agents/{agentId}/wakeup`` (alias ``/wake``), each one request to the heartbeat controller.

Board keys manage agents; agent keys and run tokens may read and wake (the controller lets an
agent read and wake only itself, and answers 403 otherwise). Deleting an agent revokes its keys:
the gateway's inbox hears the controller's ``agent.deleted.v1``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec
from litestar import Controller, Response, delete, get, patch, post
from litestar.connection import ASGIConnection
from litestar.di import NamedDependency, Provide
from litestar.handlers import BaseRouteHandler
from litestar.params import FromPath, JSONBody

from api_gateway.controllers.common import (
    TOTAL_COUNT,
    Page,
    answer,
    error_responses,
    provide_page,
)
from api_gateway.controllers.realizer import board_key, fetch, fetch_page
from api_gateway.controllers.runtime_control import acting_principal
from api_gateway.domain import ForbiddenError, NotFoundError
from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import BusReplyError
from api_gateway.http.security import access, check_company
from contracts import heartbeat_subjects as subjects
from contracts.agent_http import CreateAgentBody, UpdateAgentBody, WakeBody
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
from contracts.base import Principal
from servicekit.access import Action, Resource

__all__ = ["AgentController", "confirm_agent"]

_PAGE: Final = {"page": Provide(provide_page, sync_to_thread=False)}
_ACTING: Final = {"acting": Provide(acting_principal, sync_to_thread=False)}
_ERRORS: Final = ("forbidden", "not_found", "service_unavailable", "timeout")
_ADAPTER_DOC: Final = """

``adapterConfig`` follows ``adapterType``: ``process`` ``{command: [argv...], env?, timeoutSec?
(default 3600), limits?: {cpuSeconds?, fileSizeMb?, openFiles?, memoryMb?}}``; ``http`` ``{url,
timeoutSec?, headers?}``. The controller checks it and answers 400 ``validation_failed`` naming
``adapterConfig.<field>``."""


async def confirm_agent(gateway: Gateway, principal: Principal, agent_id: str) -> AgentView:
    """Ask the controller that ``agent_id`` is an agent of the principal's company.

    Raises:
        NotFoundError: The controller knows no such agent in the company (404 naming it).
        BusReplyError: The controller refused otherwise, or did not answer (503/504).
    """
    query = GetAgent(principal=principal, agent_id=agent_id)
    try:
        return await fetch(gateway, subjects.AGENT_GET, query, AgentView)
    except BusReplyError as exc:
        if exc.reply.status != 404:
            raise
        raise NotFoundError(
            f"agentId {agent_id} is not an agent of this company; create the agent first "
            "(POST /api/companies/{companyId}/agents).",
            agentId=agent_id,
            field="agentId",
        ) from None


def not_admin(
    connection: ASGIConnection[Any, Any, Any, Any], route_handler: BaseRouteHandler
) -> None:
    """Guard: the admin key reaches agents only to grant or take back their host trust
    (PATCH ``trustLevel``); creating and deleting them is the company's board's."""
    del route_handler
    principal: Principal = connection.user
    if principal.actor.type == "admin":
        raise ForbiddenError(
            "The admin key does not create or delete agents (a company's board key does); it "
            'only grants or takes back host trust: PATCH /api/agents/{agentId} {"trustLevel": '
            "...}."
        )


class AgentController(Controller):
    """Agents (owned by the heartbeat controller): their adapter, trust level and limits."""

    path = "/api"
    tags = ["agents"]

    @post(
        "/companies/{company_id:str}/agents",
        operation_id="createAgent",
        opt=access(Resource.AGENT, Action.WRITE),
        guards=[board_key, not_admin],
        dependencies=_ACTING,
        responses=error_responses(*_ERRORS),
        description="Create an agent → 201 agent. ``trustLevel`` is ``untrusted`` (its runs need "
        "an isolated workspace and run contained); only the admin key makes it ``trusted`` "
        "afterwards (PATCH /api/agents/{agentId} {trustLevel}: it then runs unconfined on the "
        "host). ``maxConcurrentRuns`` defaults to 1; "
        "``heartbeatIntervalSec`` (10..) wakes it on a timer."
        + _ADAPTER_DOC
        + "\n\nErrors: 400; 401; 403 (not a board key); 404 (another company); 503; 504.",
    )
    async def create_agent(
        self,
        company_id: FromPath[str],
        data: JSONBody[CreateAgentBody],
        gateway: NamedDependency[Gateway],
        acting: NamedDependency[Principal],
    ) -> AgentView:
        """Create an agent."""
        check_company(acting, company_id)
        command = CreateAgent(principal=acting, **msgspec.structs.asdict(data))
        return await fetch(gateway, subjects.AGENT_CREATE, command, AgentView)

    @get(
        "/companies/{company_id:str}/agents",
        operation_id="listAgents",
        opt=access(Resource.AGENT, Action.READ),
        dependencies=_PAGE,
        response_headers=TOTAL_COUNT,
        responses=error_responses(*_ERRORS),
    )
    async def list_agents(
        self,
        company_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        page: NamedDependency[Page],
    ) -> Response[Sequence[AgentView]]:
        """List a company's agents, by creation; ``X-Total-Count`` gives the total.

        Errors: 400 (``limit``/``offset``); 401; 403; 404 (another company); 503; 504.
        """
        check_company(principal, company_id)
        query = ListAgents(principal=principal, limit=page.limit, offset=page.offset)
        return await fetch_page(gateway, subjects.AGENT_LIST, query, AgentView)

    @get(
        "/agents/{agent_id:str}",
        operation_id="getAgent",
        opt=access(Resource.AGENT, Action.READ),
        responses=error_responses(*_ERRORS),
    )
    async def get_agent(
        self,
        agent_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> AgentView:
        """Read an agent. Errors: 401; 403 (an agent key or run token of another agent); 404;
        503; 504."""
        query = GetAgent(principal=principal, agent_id=agent_id)
        return await fetch(gateway, subjects.AGENT_GET, query, AgentView)

    @patch(
        "/agents/{agent_id:str}",
        operation_id="updateAgent",
        opt=access(Resource.AGENT, Action.WRITE),
        dependencies=_ACTING,
        responses=error_responses(*_ERRORS),
        description="Change an agent: an absent field stays as it is; "
        "``heartbeatIntervalSec: null`` stops its timer."
        + _ADAPTER_DOC
        + "\n\nErrors: 400; 401; 403 (not a board key); 404; 503; 504.",
    )
    async def update_agent(
        self,
        agent_id: FromPath[str],
        data: JSONBody[UpdateAgentBody],
        gateway: NamedDependency[Gateway],
        acting: NamedDependency[Principal],
    ) -> AgentView:
        """Change an agent."""
        command = UpdateAgent(principal=acting, agent_id=agent_id, **msgspec.structs.asdict(data))
        return await fetch(gateway, subjects.AGENT_UPDATE, command, AgentView)

    @delete(
        "/agents/{agent_id:str}",
        operation_id="deleteAgent",
        opt=access(Resource.AGENT, Action.WRITE),
        guards=[board_key, not_admin],
        dependencies=_ACTING,
        responses=error_responses(*_ERRORS),
    )
    async def delete_agent(
        self,
        agent_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        acting: NamedDependency[Principal],
    ) -> None:
        """Delete an agent → 204: its queued runs are cancelled, its running ones cancelled
        through cleanup, and its keys revoked (when the gateway hears ``agent.deleted.v1``,
        within about a second).

        Errors: 401; 403 (not a board key); 404; 503; 504.
        """
        command = DeleteAgent(principal=acting, agent_id=agent_id)
        await answer(gateway, subjects.AGENT_DELETE, command)

    @post(
        "/agents/{agent_id:str}/wakeup",
        operation_id="wakeAgent",
        opt=access(Resource.AGENT, Action.CONTROL),
        dependencies=_ACTING,
        status_code=202,
        responses=error_responses(*_ERRORS),
    )
    async def wake_agent(
        self,
        agent_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        acting: NamedDependency[Principal],
        data: JSONBody[WakeBody | None] = None,
    ) -> WakeAccepted:
        """Wake an agent → 202 ``{runId, wakeupRequestId, status}``.

        ``source`` (default ``on_demand``), ``reason``, ``issueId``, ``payload``; the same
        ``idempotencyKey`` for the agent answers the first wake's run; a wake for an agent and
        issue that already has a queued run joins it (``status: coalesced``, that run's id). An
        empty body is ``{}``. Agent keys and run tokens wake only their own agent: an agent
        key for no issue or an issue assigned to its agent, a run token for no issue or its
        run's issue.

        Errors: 400; 401; 403 (another agent, or an issue the key may not name); 404 (no such
        agent or issue); 503; 504.
        """
        return await _wake(gateway, acting, agent_id, data)

    @post(
        "/agents/{agent_id:str}/wake",
        operation_id="wakeAgentAlias",
        opt=access(Resource.AGENT, Action.CONTROL),
        dependencies=_ACTING,
        status_code=202,
        responses=error_responses(*_ERRORS),
    )
    async def wake_agent_alias(
        self,
        agent_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        acting: NamedDependency[Principal],
        data: JSONBody[WakeBody | None] = None,
    ) -> WakeAccepted:
        """The same as ``POST /api/agents/{agentId}/wakeup`` (the alias) → 202."""
        return await _wake(gateway, acting, agent_id, data)


async def _wake(
    gateway: Gateway, principal: Principal, agent_id: str, body: WakeBody | None
) -> WakeAccepted:
    body = body or WakeBody()
    command = WakeAgent(principal=principal, agent_id=agent_id, **body.command_fields())
    return await fetch(gateway, subjects.AGENT_WAKE, command, WakeAccepted)
