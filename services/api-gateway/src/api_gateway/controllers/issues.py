"""Issues: ``/api/companies/{companyId}/issues``, ``/api/issues/{issueId}`` with its work products
and ``POST /api/issues/{issueId}/execution-workspace`` (realize now, without a run).

Agent keys may read and update issues and record work products; the realizer allows them only on
issues assigned to the agent (a run token: its run's issue), and lets them change only the status,
title, description, priority, a comment and ``mode`` (ARCHITECTURE §5.1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import msgspec
from litestar import Controller, Response, delete, get, patch, post
from litestar.di import NamedDependency, Provide
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import Body, FromPath, JSONBody, QueryParameter

from api_gateway.controllers.common import TOTAL_COUNT, Page, error_responses, provide_page
from api_gateway.controllers.realizer import (
    ACCEPTED,
    InvalidRequestError,
    board_key,
    fetch,
    fetch_page,
    node_of,
    parse_choices,
)
from api_gateway.controllers.workspace_writes import perform_and_read
from api_gateway.http.dependencies import Gateway
from api_gateway.http.security import access, check_company
from contracts import workspace_subjects as subjects
from contracts.base import Principal
from contracts.execution_commands import RealizeWorkspace
from contracts.execution_views import RealizeResult
from contracts.workspace_commands import (
    AddWorkProduct,
    CreateIssue,
    DeleteIssue,
    GetIssue,
    ListIssues,
    ListWorkProducts,
    UpdateIssue,
)
from contracts.workspace_http import (
    CreateIssueBody,
    CreateWorkProductBody,
    RealizeIssueWorkspaceBody,
    UpdateIssueBody,
)
from contracts.workspace_views import ISSUE_STATUSES, Deleted, Issue, WorkProduct
from servicekit.access import Action, Resource

__all__ = ["IssueController"]

_PAGE = {"page": Provide(provide_page, sync_to_thread=False)}
_ERRORS = ("forbidden", "not_found", "timeout")


class IssueController(Controller):
    """The workspace-facing record of a task (owned by the workspace-realizer)."""

    path = "/api"
    tags = ["issues"]

    @post(
        "/companies/{company_id:str}/issues",
        operation_id="createIssue",
        opt=access(Resource.ISSUE, Action.WRITE),
        guards=[board_key],
        responses=error_responses(*_ERRORS, "identifier_taken"),
    )
    async def create_issue(
        self,
        company_id: FromPath[str],
        data: JSONBody[CreateIssueBody],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Issue:
        """Create an issue; its ``identifier`` is the company's prefix and the next number
        (``ACME-12``) unless given.

        Errors: 400; 401; 403 (not a board key); 404 (company, project, parent or project
        workspace); 409 ``identifier_taken``.
        """
        check_company(principal, company_id)
        command = CreateIssue(
            principal=principal, company_id=company_id, **msgspec.structs.asdict(data)
        )
        return await fetch(gateway, subjects.ISSUE_CREATE, command, Issue)

    @get(
        "/companies/{company_id:str}/issues",
        operation_id="listIssues",
        opt=access(Resource.ISSUE, Action.READ),
        dependencies=_PAGE,
        response_headers=TOTAL_COUNT,
        responses=error_responses(*_ERRORS),
    )
    async def list_issues(
        self,
        company_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        page: NamedDependency[Page],
        project_id: Annotated[str | None, QueryParameter(name="projectId")] = None,
        status: Annotated[
            str | None, QueryParameter(description="Comma list of issue statuses.")
        ] = None,
        assignee_agent_id: Annotated[str | None, QueryParameter(name="assigneeAgentId")] = None,
    ) -> Response[Sequence[Issue]]:
        """List a company's issues, newest first; filters ``projectId``, ``status`` (comma list),
        ``assigneeAgentId``.

        Errors: 400 ``validation_failed`` (an unknown status, named; ``limit`` outside 1..200);
        401; 403; 404.
        """
        check_company(principal, company_id)
        query = ListIssues(
            principal=principal,
            company_id=company_id,
            project_id=project_id,
            statuses=parse_choices(status, ISSUE_STATUSES, "status"),  # type: ignore[arg-type]
            assignee_agent_id=assignee_agent_id,
            limit=page.limit,
            offset=page.offset,
        )
        return await fetch_page(gateway, subjects.ISSUE_LIST, query, Issue)

    @get(
        "/issues/{issue_id:str}",
        operation_id="getIssue",
        opt=access(Resource.ISSUE, Action.READ),
        responses=error_responses(*_ERRORS),
    )
    async def get_issue(
        self,
        issue_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Issue:
        """Read an issue. Errors: 401; 403 (an agent's issue that is not its own); 404."""
        query = GetIssue(principal=principal, issue_id=issue_id)
        return await fetch(gateway, subjects.ISSUE_GET, query, Issue)

    @patch(
        "/issues/{issue_id:str}",
        operation_id="updateIssue",
        opt=access(Resource.ISSUE, Action.WRITE),
        responses=error_responses(*_ERRORS),
    )
    async def update_issue(
        self,
        issue_id: FromPath[str],
        data: JSONBody[UpdateIssueBody],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Issue:
        """Change an issue: absent fields stay, ``null`` clears; a ``comment`` is recorded as an
        event. Statuses ``backlog``, ``todo``, ``in_progress``, ``in_review``, ``blocked``,
        ``done``, ``cancelled``.

        Errors: 400; 401; 403 (an agent: not its issue, or a field beyond ``mode``); 404.
        """
        command = UpdateIssue(
            principal=principal, issue_id=issue_id, **msgspec.structs.asdict(data)
        )
        return await fetch(gateway, subjects.ISSUE_UPDATE, command, Issue)

    @delete(
        "/issues/{issue_id:str}",
        operation_id="deleteIssue",
        opt=access(Resource.ISSUE, Action.WRITE),
        guards=[board_key],
        responses=error_responses(*_ERRORS, "has_open_dependents"),
    )
    async def delete_issue(
        self,
        issue_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> None:
        """Delete an issue. Errors: 401; 403; 404; 409 ``has_open_dependents`` (its workspace is
        open, or it has open child issues)."""
        command = DeleteIssue(principal=principal, issue_id=issue_id)
        await fetch(gateway, subjects.ISSUE_DELETE, command, Deleted)

    @post(
        "/issues/{issue_id:str}/work-products",
        operation_id="createWorkProduct",
        opt=access(Resource.ISSUE, Action.WRITE),
        responses=error_responses(*_ERRORS),
    )
    async def create_work_product(
        self,
        issue_id: FromPath[str],
        data: JSONBody[CreateWorkProductBody],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> WorkProduct:
        """Record an issue's output; ``pull_request`` ones are the evidence for
        ``merged_via_pr``. Errors: 400; 401; 403; 404."""
        command = AddWorkProduct(
            principal=principal,
            issue_id=issue_id,
            product_type=data.type,
            url=data.url,
            external_id=data.external_id,
            title=data.title,
            metadata=data.metadata or {},
        )
        return await fetch(gateway, subjects.ISSUE_ADD_WORK_PRODUCT, command, WorkProduct)

    @get(
        "/issues/{issue_id:str}/work-products",
        operation_id="listWorkProducts",
        opt=access(Resource.ISSUE, Action.READ),
        dependencies=_PAGE,
        response_headers=TOTAL_COUNT,
        responses=error_responses(*_ERRORS),
    )
    async def list_work_products(
        self,
        issue_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        page: NamedDependency[Page],
    ) -> Response[Sequence[WorkProduct]]:
        """List an issue's work products, oldest first. Errors: 400; 401; 403; 404."""
        query = ListWorkProducts(
            principal=principal, issue_id=issue_id, limit=page.limit, offset=page.offset
        )
        return await fetch_page(gateway, subjects.ISSUE_WORK_PRODUCTS, query, WorkProduct)

    @post(
        "/issues/{issue_id:str}/execution-workspace",
        operation_id="realizeIssueWorkspace",
        opt=access(Resource.ISSUE, Action.CONTROL),
        responses={
            **error_responses(
                *_ERRORS,
                "low_trust_violation",
                "workspace_validation_failed",
                "configuration_incomplete",
                "managed_checkout_failed",
            ),
            **ACCEPTED,
            200: ResponseSpec(
                data_container=RealizeResult,
                generate_examples=False,
                description="The issue's open workspace was reused (`created: false`).",
            ),
        },
    )
    async def realize_issue_workspace(
        self,
        issue_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        data: Annotated[RealizeIssueWorkspaceBody | None, Body()] = None,
    ) -> Response[RealizeResult]:
        """Realize (or reuse) the issue's execution workspace now, without a run: 201 created,
        200 reused, ``{workspace, created, warnings}`` (the workspace as ``GET`` reads it right
        after: delivery state and runtime services included); 202 with an operation past the
        request deadline (110 s).

        ``mode`` overrides the issue's settings; ``executionWorkspaceId`` goes with
        ``reuse_existing``. Errors: 400; 401; 403; 404; 422 ``workspace_validation_failed``,
        ``configuration_incomplete``, ``low_trust_violation``, ``managed_checkout_failed``.
        """
        body = data or RealizeIssueWorkspaceBody()
        if body.mode == "reuse_existing" and not body.execution_workspace_id:
            raise InvalidRequestError(
                "Mode 'reuse_existing' needs 'executionWorkspaceId': the workspace to reuse.",
                fields=[{"field": "executionWorkspaceId", "message": "required", "source": "body"}],
            )
        command = RealizeWorkspace(
            principal=principal,
            issue_id=issue_id,
            mode=body.mode,
            execution_workspace_id=body.execution_workspace_id,
        )
        subject = subjects.realize_workspace(node_of(gateway))
        return await perform_and_read(
            gateway,
            principal,
            subject,
            command,
            RealizeResult,
            action="realize",
            status_code=lambda result: 201 if result.created else 200,
        )
