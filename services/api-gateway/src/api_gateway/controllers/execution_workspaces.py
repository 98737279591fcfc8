"""Execution workspaces: list, read, update (archive, reopen), close readiness, reconcile branch.

``/api/companies/{companyId}/execution-workspaces`` and ``/api/execution-workspaces/{id}``. The
audit endpoints (operations, events, history) are in ``workspace_audit``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import msgspec
from litestar import Controller, Response, get, patch, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, JSONBody, QueryParameter

from api_gateway.controllers.common import (
    TOTAL_COUNT,
    Page,
    error_responses,
    listing,
    provide_page,
)
from api_gateway.controllers.node_states import mark_unreachable
from api_gateway.controllers.realizer import (
    ACCEPTED,
    InvalidRequestError,
    fetch,
    fetch_page,
    node_of,
    parse_choices,
)
from api_gateway.controllers.runtime_facts import (
    WARNING_HEADERS,
    close_readiness,
    warned,
    workspace_detail,
)
from api_gateway.controllers.workspace_writes import perform_and_read
from api_gateway.http.dependencies import Gateway
from api_gateway.http.security import access, check_company
from contracts import workspace_subjects as subjects
from contracts.base import Principal
from contracts.execution_commands import (
    ListExecutionWorkspaces,
    ListExecutionWorkspaceSummaries,
    ReconcileBranch,
    UpdateExecutionWorkspace,
    WorkspaceFilters,
)
from contracts.execution_views import (
    WORKSPACE_STATUSES,
    CloseReadiness,
    ExecutionWorkspace,
    ExecutionWorkspaceRow,
    ExecutionWorkspaceSummary,
    ReconcileResult,
)
from contracts.workspace_http import ReconcileBranchBody, UpdateExecutionWorkspaceBody
from contracts.workspace_views import Page as Rows
from servicekit.access import Action, Resource

__all__ = ["ExecutionWorkspaceController"]

_ERRORS = ("forbidden", "not_found", "timeout")


class ExecutionWorkspaceController(Controller):
    """The concrete checkouts issues are worked in, and their lifecycle."""

    path = "/api"
    tags = ["execution-workspaces"]

    @get(
        "/companies/{company_id:str}/execution-workspaces",
        operation_id="listExecutionWorkspaces",
        opt=access(Resource.EXECUTION_WORKSPACE, Action.READ),
        dependencies={"page": Provide(provide_page, sync_to_thread=False)},
        response_headers=TOTAL_COUNT,
        responses=error_responses(*_ERRORS),
    )
    async def list_execution_workspaces(
        self,
        company_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        page: NamedDependency[Page],
        project_id: Annotated[str | None, QueryParameter(name="projectId")] = None,
        project_workspace_id: Annotated[
            str | None, QueryParameter(name="projectWorkspaceId")
        ] = None,
        issue_id: Annotated[
            str | None, QueryParameter(name="issueId", description="The source issue.")
        ] = None,
        status: Annotated[
            str | None, QueryParameter(description="Comma list of workspace statuses.")
        ] = None,
        reuse_eligible: Annotated[bool, QueryParameter(name="reuseEligible")] = False,
        summary: Annotated[
            bool, QueryParameter(description="Rows of {id, name, mode, status, cwd, …} only.")
        ] = False,
    ) -> Response[Sequence[ExecutionWorkspaceRow]]:
        """List a company's execution workspaces by ``lastUsedAt``, newest first (no delivery
        state on rows). Filters ``projectId``, ``projectWorkspaceId``, ``issueId``, ``status``
        (comma list), ``reuseEligible=true``; ``summary=true`` gives short rows.

        Errors: 400 ``validation_failed`` (an unknown status, named; ``limit`` outside 1..200);
        401; 403; 404.
        """
        check_company(principal, company_id)
        filters = WorkspaceFilters(
            project_id=project_id,
            project_workspace_id=project_workspace_id,
            issue_id=issue_id,
            statuses=parse_choices(status, WORKSPACE_STATUSES, "status"),  # type: ignore[arg-type]
            reuse_eligible=reuse_eligible,
        )
        if summary:
            brief = ListExecutionWorkspaceSummaries(
                principal=principal,
                company_id=company_id,
                filters=filters,
                limit=page.limit,
                offset=page.offset,
            )
            rows = await fetch_page(
                gateway, subjects.WORKSPACE_LIST_SUMMARIES, brief, ExecutionWorkspaceSummary
            )
            return rows  # type: ignore[return-value]
        query = ListExecutionWorkspaces(
            principal=principal,
            company_id=company_id,
            filters=filters,
            limit=page.limit,
            offset=page.offset,
        )
        found = await fetch(
            gateway,
            subjects.WORKSPACE_LIST,
            query,
            Rows[ExecutionWorkspaceRow],
            timeout=gateway.settings.query_timeout,
        )
        return listing(await mark_unreachable(gateway, found.items), found.total)

    @get(
        "/execution-workspaces/{workspace_id:str}",
        operation_id="getExecutionWorkspace",
        opt=access(Resource.EXECUTION_WORKSPACE, Action.READ),
        response_headers=WARNING_HEADERS,
        responses=error_responses(*_ERRORS),
    )
    async def get_execution_workspace(
        self,
        workspace_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Response[ExecutionWorkspace]:
        """Read a workspace with its ``deliveryState`` and ``commitsAhead`` (git is asked now),
        and, from the runtime supervisor, its ``runtimeServices`` (health probed now) and
        ``runtimeProvisioning``. If the supervisor does not answer, the rest is answered with no
        runtime services and ``X-Clipyard-Warning`` says so.

        Errors: 401; 403; 404 (no such workspace, or another company's).
        """
        workspace, warning = await workspace_detail(
            gateway, principal, workspace_id, probe_health=True
        )
        return warned(workspace, warning)

    @patch(
        "/execution-workspaces/{workspace_id:str}",
        operation_id="updateExecutionWorkspace",
        opt=access(Resource.EXECUTION_WORKSPACE, Action.WRITE),
        responses={
            **error_responses(
                *_ERRORS, "close_blocked", "reopen_pending", "not_reopenable", "lifecycle_conflict"
            ),
            **ACCEPTED,
        },
    )
    async def update_execution_workspace(
        self,
        workspace_id: FromPath[str],
        data: JSONBody[UpdateExecutionWorkspaceBody],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Response[ExecutionWorkspace]:
        """Update a workspace. ``status: "archived"`` archives it (stops its services, runs the
        cleanup and teardown commands, writes a rescue ref when anything undelivered would be
        lost, removes the worktree, deletes the branch only when delivered); a closed workspace
        patched to ``"active"`` is reopened. ``config`` (board keys only) is merged key by key.
        Answers the workspace as ``GET`` reads it right after (delivery state and runtime
        services included); 202 with an operation past the request deadline (110 s).

        Board keys only (the access model refuses agent keys and run tokens a workspace write).
        Errors: 400; 401; 403 (not a board key); 404; 409 ``close_blocked`` (details name the
        reasons), ``reopen_pending``, ``not_reopenable``, ``lifecycle_conflict``.
        """
        command = UpdateExecutionWorkspace(
            principal=principal, workspace_id=workspace_id, **msgspec.structs.asdict(data)
        )
        subject = subjects.update_execution_workspace(node_of(gateway))
        return await perform_and_read(
            gateway, principal, subject, command, ExecutionWorkspace, action="update"
        )

    @get(
        "/execution-workspaces/{workspace_id:str}/close-readiness",
        operation_id="getCloseReadiness",
        opt=access(Resource.EXECUTION_WORKSPACE, Action.READ),
        response_headers=WARNING_HEADERS,
        responses=error_responses(*_ERRORS),
    )
    async def get_close_readiness(
        self,
        workspace_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Response[CloseReadiness]:
        """What archiving would do, and whether it may: ``state`` (``ready``,
        ``ready_with_warnings``, ``blocked``), reasons, warnings, planned actions, delivery and git
        facts, linked issues, and the runtime services the supervisor runs for it (not
        re-probed; ``X-Clipyard-Warning`` when the supervisor does not answer).

        Errors: 401; 403; 404."""
        readiness, warning = await close_readiness(gateway, principal, workspace_id)
        return warned(readiness, warning)

    @post(
        "/execution-workspaces/{workspace_id:str}/reconcile-branch",
        operation_id="reconcileBranch",
        opt=access(Resource.EXECUTION_WORKSPACE, Action.WRITE),
        status_code=200,
        responses={
            **error_responses(*_ERRORS, "branch_reconcile_refused", "lifecycle_conflict"),
            **ACCEPTED,
        },
    )
    async def reconcile_branch(
        self,
        workspace_id: FromPath[str],
        data: JSONBody[ReconcileBranchBody],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Response[ReconcileResult]:
        """Reconcile the recorded branch with the checked-out one (board keys only): ``forward``
        (the live branch descends from the recorded one), ``override`` (needs a ``reason``),
        ``quarantine_restore`` (rescue a dirty tree, then restore the recorded branch). 202 with
        an operation past the request deadline (110 s).

        Errors: 400 (``override`` without ``reason``); 401; 403 (not a board key); 404; 409
        ``lifecycle_conflict``; 422 ``branch_reconcile_refused`` (the message says why).
        """
        if data.mode == "override" and not (data.reason or "").strip():
            raise InvalidRequestError(
                "Mode 'override' needs a 'reason': say why the recorded branch is replaced.",
                fields=[{"field": "reason", "message": "required for override", "source": "body"}],
            )
        command = ReconcileBranch(
            principal=principal, workspace_id=workspace_id, mode=data.mode, reason=data.reason
        )
        subject = subjects.reconcile_branch(node_of(gateway))
        return await perform_and_read(
            gateway, principal, subject, command, ReconcileResult, action="branch reconcile"
        )
