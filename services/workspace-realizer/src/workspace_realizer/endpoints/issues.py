"""Endpoints of issues and their work products (``Resource.ISSUE``: read, and write for changes
and work products). Creating is the board's: an agent is refused here, before any lookup. A
board's ``assigneeAgentId`` is checked here, against the agents' copy or the heartbeat-controller
(:mod:`workspace_realizer.references`), before the use case runs; an agent's is refused by the
use case (an agent does not reassign, ARCHITECTURE §5.1)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

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
from workspace_realizer.endpoints.common import Endpoints, builtins, cause_of, changes
from workspace_realizer.references import check_assignee
from workspace_realizer.views import issue_view, work_product_view

if TYPE_CHECKING:
    from contracts.workspace_views import Issue, WorkProduct
    from natsbus import RequestContext

__all__ = ["COMPANY_WAIT", "register_issues"]

COMPANY_WAIT = 5.0
"""Seconds an issue creation waits for the gateway's ``company.created.v1`` to reach the inbox
(a company created a moment ago)."""

_ISSUE_FIELDS = {
    "title": "title",
    "status": "status",
    "parent_id": "parent_id",
    "assignee_agent_id": "assignee_agent_id",
    "project_workspace_id": "project_workspace_id",
    "execution_workspace_settings": "settings",
    "description": "description",
    "priority": "priority",
    "comment": "comment",
}


async def register_issues(e: Endpoints) -> None:
    """Add the issue endpoints."""
    app = e.app

    async def assignee(company_id: str, agent_id: str | None) -> None:
        if agent_id:
            await check_assignee(e.runtime.store, app, e.realizer.agents, company_id, agent_id)

    async def known(company_id: str) -> None:
        deadline = time.monotonic() + COMPANY_WAIT
        while time.monotonic() < deadline:
            if await e.runtime.store(app.company_copy, company_id) is not None:
                return
            await asyncio.sleep(0.05)

    async def create(c: CreateIssue, ctx: RequestContext) -> Issue:
        # Refuse what needs no record first, before any lookup (the company copy, the
        # assignee's round trip to the controller): creating issues is the board's, in its
        # own company.
        access = e.allow(c.principal, Resource.ISSUE, Action.WRITE)
        access.check_board("create issues")
        access.check_company(c.company_id, "company", c.company_id)
        await known(c.company_id)
        await assignee(c.company_id, c.assignee_agent_id)
        fields: dict[str, Any] = {
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
        return await e.run(
            access,
            lambda a: issue_view(app.create_issue(a, c.company_id, fields)),
            cause_of(c.principal, "create issue"),
        )

    async def update(c: UpdateIssue, ctx: RequestContext) -> Issue:
        access = e.allow(c.principal, Resource.ISSUE, Action.WRITE)
        patch = changes(c, _ISSUE_FIELDS)
        if "settings" in patch:
            patch["settings"] = builtins(patch["settings"])
        # An agent may not reassign (the use case refuses it, 403): its assignee is not looked up.
        if patch.get("assignee_agent_id") and not access.is_agent:
            current = await e.run(access, lambda a: app.issue_of(a, c.issue_id))
            await assignee(current.company_id, patch["assignee_agent_id"])
        return await e.run(
            access,
            lambda a: issue_view(app.update_issue(a, c.issue_id, patch)),
            cause_of(c.principal, "update issue"),
        )

    async def delete(c: DeleteIssue, ctx: RequestContext) -> Deleted:
        await e.write(
            c.principal, Resource.ISSUE, "delete issue", lambda a: app.delete_issue(a, c.issue_id)
        )
        return Deleted(id=c.issue_id)

    async def get(q: GetIssue, ctx: RequestContext) -> Issue:
        return await e.read(
            q.principal, Resource.ISSUE, lambda a: issue_view(app.issue_of(a, q.issue_id))
        )

    async def list_(q: ListIssues, ctx: RequestContext) -> Page[Issue]:
        def page(a: Access) -> Page[Issue]:
            rows, total = app.list_issues(
                a,
                q.company_id,
                project_id=q.project_id,
                statuses=q.statuses,
                assignee_agent_id=q.assignee_agent_id,
                limit=q.limit,
                offset=q.offset,
            )
            return Page(items=[issue_view(i) for i in rows], total=total)

        return await e.read(q.principal, Resource.ISSUE, page)

    async def add_product(c: AddWorkProduct, ctx: RequestContext) -> WorkProduct:
        product = {
            "type": c.product_type,
            "url": c.url,
            "externalId": c.external_id,
            "title": c.title,
            "metadata": c.metadata,
        }

        def add(a: Access) -> WorkProduct:
            stored = app.add_work_product(a, c.issue_id, product)
            return work_product_view(app.issues[c.issue_id].company_id, c.issue_id, stored)

        return await e.write(c.principal, Resource.ISSUE, "add work product", add)

    async def products(q: ListWorkProducts, ctx: RequestContext) -> Page[WorkProduct]:
        def page(a: Access) -> Page[WorkProduct]:
            issue = app.issue_of(a, q.issue_id)
            rows = [work_product_view(issue.company_id, q.issue_id, p) for p in issue.work_products]
            return Page(items=rows[q.offset : q.offset + q.limit], total=len(rows))

        return await e.read(q.principal, Resource.ISSUE, page)

    await e.add("issue_create", subjects.ISSUE_CREATE, create, CreateIssue)
    await e.add("issue_update", subjects.ISSUE_UPDATE, update, UpdateIssue)
    await e.add("issue_delete", subjects.ISSUE_DELETE, delete, DeleteIssue)
    await e.add("issue_get", subjects.ISSUE_GET, get, GetIssue)
    await e.add("issue_list", subjects.ISSUE_LIST, list_, ListIssues)
    await e.add(
        "issue_add_work_product", subjects.ISSUE_ADD_WORK_PRODUCT, add_product, AddWorkProduct
    )
    await e.add("issue_work_products", subjects.ISSUE_WORK_PRODUCTS, products, ListWorkProducts)
