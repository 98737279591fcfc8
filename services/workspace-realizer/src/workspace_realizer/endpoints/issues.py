"""Endpoints of issues and their work products (``Resource.ISSUE``: read, and write for changes
and work products). Creating is the board's: an agent is refused here, before any lookup. A
board's ``assigneeAgentId`` is checked here, against the agents' copy or the heartbeat-controller
(:mod:`workspace_realizer.usecases.references`), before the use case runs; an agent's is refused by the
use case (an agent does not reassign, ARCHITECTURE §5.1)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import msgspec

import contracts.workspace_subjects as subjects
from contracts.workspace_commands import (
    AddWorkProduct,
    CreateIssue,
    DeleteIssue,
    GetIssue,
    ListIssues,
    ListWorkProducts,
    UpdateIssue,
)
from contracts.workspace_views import Deleted, Page
from servicekit.access import Access, Action, Resource
from servicekit.routes import Route
from workspace_realizer.endpoints.common import Endpoints, builtins, cause_of
from workspace_realizer.usecases.references import check_assignee
from workspace_realizer.usecases.views import issue_view, work_product_view

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contracts.workspace_views import Issue, WorkProduct
    from natsbus import RequestContext
    from servicekit import ServiceRuntime
    from workspace_realizer.domain.documents import IssueChanges, NewIssue, WorkProductInput
    from workspace_realizer.usecases.references import AgentDirectory

__all__ = ["COMPANY_WAIT", "IssueEndpoints"]

COMPANY_WAIT = 5.0
"""Seconds an issue creation waits for the gateway's ``company.created.v1`` to reach the inbox
(a company created a moment ago)."""


def issue_changes(c: UpdateIssue) -> IssueChanges:
    """The fields an update sets, by their domain names (the settings as stored), in the order
    the request declares them."""
    patch: IssueChanges = {}
    if c.title is not msgspec.UNSET:
        patch["title"] = c.title
    if c.status is not msgspec.UNSET:
        patch["status"] = c.status
    if c.parent_id is not msgspec.UNSET:
        patch["parent_id"] = c.parent_id
    if c.assignee_agent_id is not msgspec.UNSET:
        patch["assignee_agent_id"] = c.assignee_agent_id
    if c.project_workspace_id is not msgspec.UNSET:
        patch["project_workspace_id"] = c.project_workspace_id
    if c.execution_workspace_settings is not msgspec.UNSET:
        patch["settings"] = builtins(c.execution_workspace_settings)
    if c.description is not msgspec.UNSET:
        patch["description"] = c.description
    if c.priority is not msgspec.UNSET:
        patch["priority"] = c.priority
    if c.comment is not msgspec.UNSET:
        patch["comment"] = c.comment
    return patch


class IssueEndpoints(Endpoints):
    """Create, change, delete, read and list issues; add and list their work products."""

    def __init__(self, runtime: ServiceRuntime, agents: AgentDirectory) -> None:
        super().__init__(runtime)
        self.agents = agents
        """Asked which company an agent belongs to when the realizer's copy does not know it."""

    def routes(self) -> Sequence[Route]:
        """The issue endpoints."""
        return (
            Route("issue_create", subjects.ISSUE_CREATE, self.create, CreateIssue),
            Route("issue_update", subjects.ISSUE_UPDATE, self.update, UpdateIssue),
            Route("issue_delete", subjects.ISSUE_DELETE, self.delete, DeleteIssue),
            Route("issue_get", subjects.ISSUE_GET, self.get, GetIssue),
            Route("issue_list", subjects.ISSUE_LIST, self.list, ListIssues),
            Route(
                "issue_add_work_product",
                subjects.ISSUE_ADD_WORK_PRODUCT,
                self.add_work_product,
                AddWorkProduct,
            ),
            Route(
                "issue_work_products",
                subjects.ISSUE_WORK_PRODUCTS,
                self.work_products,
                ListWorkProducts,
            ),
        )

    async def _assignee(self, company_id: str, agent_id: str | None) -> None:
        if agent_id:
            await check_assignee(self.runtime.store, self.app, self.agents, company_id, agent_id)

    async def _known(self, company_id: str) -> None:
        deadline = time.monotonic() + COMPANY_WAIT
        while time.monotonic() < deadline:
            if await self.runtime.store(self.app.company_copy, company_id) is not None:
                return
            await asyncio.sleep(0.05)

    async def create(self, c: CreateIssue, ctx: RequestContext) -> Issue:
        """``ws.cmd.issue.create``."""
        # Refuse what needs no record first, before any lookup (the company copy, the
        # assignee's round trip to the controller): creating issues is the board's, in its
        # own company.
        access = self.allow(c.principal, Resource.ISSUE, Action.WRITE)
        access.check_board("create issues")
        access.check_company(c.company_id, "company", c.company_id)
        await self._known(c.company_id)
        await self._assignee(c.company_id, c.assignee_agent_id)
        fields: NewIssue = {
            "project_id": c.project_id,
            "title": c.title,
            "identifier": c.identifier,
            "status": c.status,
            "parent_id": c.parent_id,
            "assignee_agent_id": c.assignee_agent_id,
            "project_workspace_id": c.project_workspace_id,
            "settings": builtins(c.execution_workspace_settings),
            "description": c.description,
            "priority": c.priority,
            "comment": c.comment,
        }
        return await self.run(
            access,
            lambda a: issue_view(self.app.create_issue(a, c.company_id, fields)),
            cause_of(c.principal, "create issue"),
        )

    async def update(self, c: UpdateIssue, ctx: RequestContext) -> Issue:
        """``ws.cmd.issue.update``."""
        access = self.allow(c.principal, Resource.ISSUE, Action.WRITE)
        patch = issue_changes(c)
        # An agent may not reassign (the use case refuses it, 403): its assignee is not looked up.
        if patch.get("assignee_agent_id") and not access.is_agent:
            current = await self.run(access, lambda a: self.app.issue_of(a, c.issue_id))
            await self._assignee(current.company_id, patch["assignee_agent_id"])
        return await self.run(
            access,
            lambda a: issue_view(self.app.update_issue(a, c.issue_id, patch)),
            cause_of(c.principal, "update issue"),
        )

    async def delete(self, c: DeleteIssue, ctx: RequestContext) -> Deleted:
        """``ws.cmd.issue.delete``."""
        await self.write(
            c.principal,
            Resource.ISSUE,
            "delete issue",
            lambda a: self.app.delete_issue(a, c.issue_id),
        )
        return Deleted(id=c.issue_id)

    async def get(self, q: GetIssue, ctx: RequestContext) -> Issue:
        """``ws.qry.issue.get``."""
        return await self.read(
            q.principal, Resource.ISSUE, lambda a: issue_view(self.app.issue_of(a, q.issue_id))
        )

    async def list(self, q: ListIssues, ctx: RequestContext) -> Page[Issue]:
        """``ws.qry.issue.list``."""

        def page(a: Access) -> Page[Issue]:
            rows, total = self.app.list_issues(
                a,
                q.company_id,
                project_id=q.project_id,
                statuses=q.statuses,
                assignee_agent_id=q.assignee_agent_id,
                limit=q.limit,
                offset=q.offset,
            )
            return Page(items=[issue_view(i) for i in rows], total=total)

        return await self.read(q.principal, Resource.ISSUE, page)

    async def add_work_product(self, c: AddWorkProduct, ctx: RequestContext) -> WorkProduct:
        """``ws.cmd.issue.add_work_product``."""
        product: WorkProductInput = {
            "type": c.product_type,
            "url": c.url,
            "externalId": c.external_id,
            "title": c.title,
            "metadata": c.metadata,
        }

        def add(a: Access) -> WorkProduct:
            stored = self.app.add_work_product(a, c.issue_id, product)
            return work_product_view(self.app.issues[c.issue_id].company_id, c.issue_id, stored)

        return await self.write(c.principal, Resource.ISSUE, "add work product", add)

    async def work_products(self, q: ListWorkProducts, ctx: RequestContext) -> Page[WorkProduct]:
        """``ws.qry.issue.work_products``."""

        def page(a: Access) -> Page[WorkProduct]:
            issue = self.app.issue_of(a, q.issue_id)
            rows = [work_product_view(issue.company_id, q.issue_id, p) for p in issue.work_products]
            return Page(items=rows[q.offset : q.offset + q.limit], total=len(rows))

        return await self.read(q.principal, Resource.ISSUE, page)
