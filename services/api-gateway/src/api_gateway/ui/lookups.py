"""Names for ids on the pages (agents, board keys, issues, workspaces), best effort.

A list page shows an agent's name rather than its id when the owning service answers; when it
does not, the page still renders (with the ids) rather than failing for a label.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any, TypeVar

from api_gateway.controllers.realizer import fetch
from api_gateway.domain import CompanyNotFoundError
from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import BusReplyError
from contracts import heartbeat_subjects, workspace_subjects
from contracts.agents import AgentView, ListAgents, ListRuns, RunFilters, RunView
from contracts.base import Principal
from contracts.execution_commands import (
    ListExecutionWorkspaceSummaries,
    WorkspaceFilters,
)
from contracts.execution_views import ExecutionWorkspaceSummary
from contracts.workspace_commands import ListIssues, ListProjects
from contracts.workspace_views import Issue, Page, Project

__all__ = [
    "LOOKUP_LIMIT",
    "agent_names",
    "gather",
    "issue_identifiers",
    "issue_runs",
    "key_names",
    "project_names",
    "workspace_names",
]

T = TypeVar("T")

log = logging.getLogger(__name__)

LOOKUP_LIMIT = 200
"""Rows read per lookup (the API's page limit)."""


async def gather(*awaitables: Awaitable[Any]) -> list[Any]:
    """Await several reads together; the first failure cancels the others and is raised as is
    (``asyncio.gather`` would leave them running, a ``TaskGroup`` would wrap the error)."""
    tasks = [asyncio.ensure_future(one) for one in awaitables]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _items(gateway: Gateway, subject: str, query: Any, row: type[T]) -> list[T]:
    try:
        page = await fetch(
            gateway,
            subject,
            query,
            Page[row],  # type: ignore[valid-type]
            timeout=gateway.settings.query_timeout,
        )
    except BusReplyError as exc:
        log.warning("names from %s are not shown: %s", subject, exc)
        return []
    return list(page.items)


async def agent_names(gateway: Gateway, principal: Principal) -> dict[str, str]:
    """Agent id → name (empty when the heartbeat controller does not answer)."""
    query = ListAgents(principal=principal, limit=LOOKUP_LIMIT)
    rows = await _items(gateway, heartbeat_subjects.AGENT_LIST, query, AgentView)
    return {agent.id: agent.name for agent in rows}


async def key_names(gateway: Gateway, principal: Principal) -> dict[str, str]:
    """Board key id → name, of every key of the principal's company (revoked ones too: they
    acted before they were revoked); empty for the admin or a company the gateway does not
    know. The keys are the gateway's own read model (``GET /api/companies/{id}/api-keys``)."""
    company_id = principal.company_id
    if company_id is None:
        return {}
    keys = gateway.application.list_api_keys
    try:
        rows, total = await gateway.query(keys, company_id, LOOKUP_LIMIT, 0)
        if total > len(rows):
            rows, _ = await gateway.query(keys, company_id, total, 0)
    except CompanyNotFoundError as exc:
        log.warning("board key names are not shown: %s", exc)
        return {}
    return {row.id: row.name for row in rows if row.kind == "board"}


async def issue_identifiers(gateway: Gateway, principal: Principal) -> dict[str, str]:
    """Issue id → identifier (``ACME-12``), newest issues first."""
    query = ListIssues(
        principal=principal, company_id=principal.company_id or "", limit=LOOKUP_LIMIT
    )
    rows = await _items(gateway, workspace_subjects.ISSUE_LIST, query, Issue)
    return {issue.id: issue.identifier for issue in rows}


async def workspace_names(gateway: Gateway, principal: Principal) -> dict[str, str]:
    """Execution workspace id → name, most recently used first."""
    query = ListExecutionWorkspaceSummaries(
        principal=principal,
        company_id=principal.company_id or "",
        filters=WorkspaceFilters(),
        limit=LOOKUP_LIMIT,
    )
    rows = await _items(
        gateway, workspace_subjects.WORKSPACE_LIST_SUMMARIES, query, ExecutionWorkspaceSummary
    )
    return {row.id: row.name for row in rows}


async def project_names(gateway: Gateway, principal: Principal) -> dict[str, str]:
    """Project id → name, oldest first (the order the forms offer them in)."""
    query = ListProjects(
        principal=principal, company_id=principal.company_id or "", limit=LOOKUP_LIMIT
    )
    rows = await _items(gateway, workspace_subjects.PROJECT_LIST, query, Project)
    return {project.id: project.name for project in rows}


async def issue_runs(
    gateway: Gateway, principal: Principal, issue_id: str, limit: int
) -> list[RunView]:
    """The issue's newest ``limit`` runs.

    Raises:
        BusReplyError: The heartbeat controller refused or did not answer.
    """
    query = ListRuns(principal=principal, filters=RunFilters(issue_id=issue_id), limit=limit)
    page = await fetch(
        gateway,
        heartbeat_subjects.RUN_LIST,
        query,
        Page[RunView],  # type: ignore[valid-type]
        timeout=gateway.settings.query_timeout,
    )
    return list(page.items)
