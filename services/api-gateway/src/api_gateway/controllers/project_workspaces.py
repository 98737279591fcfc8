"""Project workspaces: ``/api/projects/{projectId}/workspaces[/{workspaceId}]``."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from litestar import Controller, Response, delete, get, patch, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, JSONBody

from api_gateway.controllers.common import TOTAL_COUNT, Page, error_responses, provide_page
from api_gateway.controllers.placement import node_unanswered, place_project_workspace
from api_gateway.controllers.realizer import (
    ACCEPTED,
    fetch,
    fetch_page,
    node_of,
    perform,
)
from api_gateway.domain import GatewayError
from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import BusReplyError
from api_gateway.http.security import access
from contracts import workspace_subjects as subjects
from contracts.base import Principal
from contracts.errors import ErrorCode
from contracts.workspace_commands import (
    CreateProjectWorkspace,
    DeleteProjectWorkspace,
    GetProjectWorkspace,
    ListProjectWorkspaces,
    UpdateProjectWorkspace,
)
from contracts.workspace_http import CreateProjectWorkspaceBody, UpdateProjectWorkspaceBody
from contracts.workspace_views import Deleted, ProjectWorkspace
from servicekit.access import Action, Resource

__all__ = ["ProjectWorkspaceController", "WorkspacePathRequiredError"]

_ERRORS = ("forbidden", "not_found", "timeout")


class WorkspacePathRequiredError(GatewayError):
    """A project workspace with neither a local path nor a repository."""

    code = ErrorCode.WORKSPACE_PATH_REQUIRED


def _path_required() -> WorkspacePathRequiredError:
    return WorkspacePathRequiredError(
        "A project workspace needs a local checkout ('cwd') or a repository ('repoUrl'); "
        "give one of them.",
        fields=["cwd", "repoUrl"],
    )


class ProjectWorkspaceController(Controller):
    """A project's codebase roots, with their runtime config (services and jobs)."""

    path = "/api/projects/{project_id:str}/workspaces"
    tags = ["project-workspaces"]

    @post(
        "/",
        operation_id="createProjectWorkspace",
        opt=access(Resource.PROJECT_WORKSPACE, Action.WRITE),
        responses={
            **error_responses(
                *_ERRORS,
                "workspace_path_required",
                "unprocessable",
                "managed_checkout_failed",
                "node_unreachable",
            ),
            **ACCEPTED,
        },
    )
    async def create_project_workspace(
        self,
        project_id: FromPath[str],
        data: JSONBody[CreateProjectWorkspaceBody],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Response[ProjectWorkspace]:
        """Add a project workspace from a local path (``cwd``) or a repository (``repoUrl``, cloned
        now under ``$CLIPYARD_HOME``: 202 with an operation if it outlasts the request deadline,
        110 s).

        It is placed on a worker node for life (``nodeId``; default the only ready node; with
        several, required for a ``cwd``, else the least loaded: docs/scale-out.md, "Worker
        nodes").

        Errors: 400; 401; 403 (not a board key); 404 (also an unknown ``nodeId``); 422
        ``workspace_path_required`` (neither ``cwd`` nor ``repoUrl``), ``unprocessable`` (a
        ``cwd`` without ``nodeId`` while several nodes are ready), ``managed_checkout_failed``;
        503 ``node_unreachable``.
        """
        if not data.cwd and not data.repo_url:
            raise _path_required()
        fields = msgspec.structs.asdict(data)
        requested = fields.pop("node_id")
        command = CreateProjectWorkspace(principal=principal, project_id=project_id, **fields)
        node = await place_project_workspace(gateway, requested, has_cwd=bool(data.cwd))
        subject = subjects.create_project_workspace(node)
        try:
            return await perform(gateway, subject, command, ProjectWorkspace, status_code=201)
        except BusReplyError as exc:  # placed on a node whose host part is down
            raise node_unanswered(exc, subject, node) from None

    @get(
        "/",
        operation_id="listProjectWorkspaces",
        opt=access(Resource.PROJECT_WORKSPACE, Action.READ),
        dependencies={"page": Provide(provide_page, sync_to_thread=False)},
        response_headers=TOTAL_COUNT,
        responses=error_responses(*_ERRORS),
    )
    async def list_project_workspaces(
        self,
        project_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        page: NamedDependency[Page],
    ) -> Response[Sequence[ProjectWorkspace]]:
        """List a project's workspaces, oldest first (total in ``X-Total-Count``).

        Errors: 400 (``limit`` outside 1..200); 401; 403; 404 (no such project).
        """
        query = ListProjectWorkspaces(
            principal=principal, project_id=project_id, limit=page.limit, offset=page.offset
        )
        return await fetch_page(gateway, subjects.PROJECT_WORKSPACE_LIST, query, ProjectWorkspace)

    @get(
        "/{workspace_id:str}",
        operation_id="getProjectWorkspace",
        opt=access(Resource.PROJECT_WORKSPACE, Action.READ),
        responses=error_responses(*_ERRORS),
    )
    async def get_project_workspace(
        self,
        project_id: FromPath[str],
        workspace_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> ProjectWorkspace:
        """Read a project workspace with its runtime config and managed checkout.

        Errors: 401; 403; 404.
        """
        query = GetProjectWorkspace(
            principal=principal, project_id=project_id, workspace_id=workspace_id
        )
        return await fetch(gateway, subjects.PROJECT_WORKSPACE_GET, query, ProjectWorkspace)

    @patch(
        "/{workspace_id:str}",
        operation_id="updateProjectWorkspace",
        opt=access(Resource.PROJECT_WORKSPACE, Action.WRITE),
        responses={
            **error_responses(
                *_ERRORS, "workspace_path_required", "managed_checkout_failed", "state_conflict"
            ),
            **ACCEPTED,
        },
    )
    async def update_project_workspace(
        self,
        project_id: FromPath[str],
        workspace_id: FromPath[str],
        data: JSONBody[UpdateProjectWorkspaceBody],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Response[ProjectWorkspace]:
        """Change a project workspace; absent fields stay, ``null`` clears. Setting ``isPrimary``
        clears it on the siblings; a new ``repoUrl`` is cloned (202 past the request deadline,
        110 s).

        Errors: 400; 401; 403; 404; 409 ``state_conflict`` (clearing the only one of ``cwd`` and
        ``repoUrl`` the workspace has); 422 ``workspace_path_required`` (the body clears both).
        """
        if data.cwd is None and data.repo_url is None:
            raise _path_required()
        command = UpdateProjectWorkspace(
            principal=principal,
            project_id=project_id,
            workspace_id=workspace_id,
            **msgspec.structs.asdict(data),
        )
        subject = subjects.update_project_workspace(node_of(gateway))
        return await perform(gateway, subject, command, ProjectWorkspace)

    @delete(
        "/{workspace_id:str}",
        operation_id="deleteProjectWorkspace",
        opt=access(Resource.PROJECT_WORKSPACE, Action.WRITE),
        responses=error_responses(*_ERRORS, "has_open_dependents"),
    )
    async def delete_project_workspace(
        self,
        project_id: FromPath[str],
        workspace_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> None:
        """Delete the record (its directory stays). Errors: 401; 403; 404; 409
        ``has_open_dependents`` (open execution workspaces use it)."""
        command = DeleteProjectWorkspace(
            principal=principal, project_id=project_id, workspace_id=workspace_id
        )
        await fetch(gateway, subjects.PROJECT_WORKSPACE_DELETE, command, Deleted)
