"""Projects: ``/api/companies/{companyId}/projects`` and ``/api/projects/{projectId}``."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from litestar import Controller, Response, delete, get, patch, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, JSONBody

from api_gateway.controllers.common import TOTAL_COUNT, Page, error_responses, provide_page
from api_gateway.controllers.realizer import fetch, fetch_page
from api_gateway.http.dependencies import Gateway
from api_gateway.http.security import access, check_company
from contracts import workspace_subjects as subjects
from contracts.base import Principal
from contracts.workspace_commands import (
    CreateProject,
    DeleteProject,
    GetProject,
    ListProjects,
    UpdateProject,
)
from contracts.workspace_http import CreateProjectBody, UpdateProjectBody
from contracts.workspace_views import Deleted, Project
from servicekit.access import Action, Resource

__all__ = ["ProjectController"]

_PAGE = {"page": Provide(provide_page, sync_to_thread=False)}


class ProjectController(Controller):
    """Projects and their execution-workspace policy (owned by the workspace-realizer)."""

    path = "/api"
    tags = ["projects"]

    @post(
        "/companies/{company_id:str}/projects",
        operation_id="createProject",
        opt=access(Resource.PROJECT, Action.WRITE),
        responses=error_responses("forbidden", "not_found", "timeout"),
    )
    async def create_project(
        self,
        company_id: FromPath[str],
        data: JSONBody[CreateProjectBody],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Project:
        """Create a project; the policy defaults to ``shared_workspace`` (set
        ``isolated_workspace`` for a worktree per issue).

        Errors: 400 ``validation_failed``/``invalid_json``; 401; 403 ``forbidden`` (not a board
        key); 404 ``not_found`` (another company).
        """
        check_company(principal, company_id)
        command = CreateProject(
            principal=principal, company_id=company_id, **msgspec.structs.asdict(data)
        )
        return await fetch(gateway, subjects.PROJECT_CREATE, command, Project)

    @get(
        "/companies/{company_id:str}/projects",
        operation_id="listProjects",
        opt=access(Resource.PROJECT, Action.READ),
        dependencies=_PAGE,
        response_headers=TOTAL_COUNT,
        responses=error_responses("forbidden", "not_found", "timeout"),
    )
    async def list_projects(
        self,
        company_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        page: NamedDependency[Page],
    ) -> Response[Sequence[Project]]:
        """List a company's projects, oldest first, with the total in ``X-Total-Count``.

        Errors: 400 ``validation_failed`` (``limit`` outside 1..200); 401; 403; 404.
        """
        check_company(principal, company_id)
        query = ListProjects(
            principal=principal, company_id=company_id, limit=page.limit, offset=page.offset
        )
        return await fetch_page(gateway, subjects.PROJECT_LIST, query, Project)

    @get(
        "/projects/{project_id:str}",
        operation_id="getProject",
        opt=access(Resource.PROJECT, Action.READ),
        responses=error_responses("forbidden", "not_found", "timeout"),
    )
    async def get_project(
        self,
        project_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Project:
        """Read a project. Errors: 401; 403; 404 ``not_found`` (or another company's)."""
        query = GetProject(principal=principal, project_id=project_id)
        return await fetch(gateway, subjects.PROJECT_GET, query, Project)

    @patch(
        "/projects/{project_id:str}",
        operation_id="updateProject",
        opt=access(Resource.PROJECT, Action.WRITE),
        responses=error_responses("forbidden", "not_found", "timeout"),
    )
    async def update_project(
        self,
        project_id: FromPath[str],
        data: JSONBody[UpdateProjectBody],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Project:
        """Rename a project or replace its policy (absent fields stay as they are).

        Errors: 400; 401; 403 (not a board key); 404.
        """
        command = UpdateProject(
            principal=principal, project_id=project_id, **msgspec.structs.asdict(data)
        )
        return await fetch(gateway, subjects.PROJECT_UPDATE, command, Project)

    @delete(
        "/projects/{project_id:str}",
        operation_id="deleteProject",
        opt=access(Resource.PROJECT, Action.WRITE),
        responses=error_responses("forbidden", "not_found", "has_open_dependents", "timeout"),
    )
    async def delete_project(
        self,
        project_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> None:
        """Delete a project. Errors: 401; 403; 404; 409 ``has_open_dependents`` (open workspaces)."""
        command = DeleteProject(principal=principal, project_id=project_id)
        await fetch(gateway, subjects.PROJECT_DELETE, command, Deleted)
