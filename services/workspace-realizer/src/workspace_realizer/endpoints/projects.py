"""Endpoints of projects (``Resource.PROJECT``): only the board writes them; agent keys and run
tokens read them redacted (``Reach.REDACTED``, ARCHITECTURE §5.1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

import contracts.workspace_subjects as subjects
from contracts.workspace_commands import (
    CreateProject,
    DeleteProject,
    GetProject,
    ListProjects,
    UpdateProject,
)
from contracts.workspace_views import Deleted, Page
from servicekit.access import Access, Resource
from servicekit.routes import Route
from workspace_realizer.endpoints.common import Endpoints, builtins
from workspace_realizer.usecases.views import project_view

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contracts.workspace_views import Project
    from natsbus import RequestContext

__all__ = ["ProjectEndpoints"]


class ProjectEndpoints(Endpoints):
    """Create, change, delete, read and list projects."""

    def routes(self) -> Sequence[Route]:
        """The project endpoints."""
        return (
            Route("project_create", subjects.PROJECT_CREATE, self.create, CreateProject),
            Route("project_update", subjects.PROJECT_UPDATE, self.update, UpdateProject),
            Route("project_delete", subjects.PROJECT_DELETE, self.delete, DeleteProject),
            Route("project_get", subjects.PROJECT_GET, self.get, GetProject),
            Route("project_list", subjects.PROJECT_LIST, self.list, ListProjects),
        )

    async def create(self, c: CreateProject, ctx: RequestContext) -> Project:
        """``ws.cmd.project.create``."""
        policy = builtins(c.execution_workspace_policy)
        return await self.write(
            c.principal,
            Resource.PROJECT,
            "create project",
            lambda a: project_view(self.app.create_project(a, c.company_id, c.name, policy)),
        )

    async def update(self, c: UpdateProject, ctx: RequestContext) -> Project:
        """``ws.cmd.project.update``."""
        name = None if c.name is msgspec.UNSET else c.name
        policy = (
            None
            if c.execution_workspace_policy is msgspec.UNSET
            else builtins(c.execution_workspace_policy)
        )
        return await self.write(
            c.principal,
            Resource.PROJECT,
            "update project",
            lambda a: project_view(self.app.update_project(a, c.project_id, name, policy)),
        )

    async def delete(self, c: DeleteProject, ctx: RequestContext) -> Deleted:
        """``ws.cmd.project.delete``."""
        await self.write(
            c.principal,
            Resource.PROJECT,
            "delete project",
            lambda a: self.app.delete_project(a, c.project_id),
        )
        return Deleted(id=c.project_id)

    async def get(self, q: GetProject, ctx: RequestContext) -> Project:
        """``ws.qry.project.get``."""
        return await self.read(
            q.principal,
            Resource.PROJECT,
            lambda a: project_view(
                self.app.project_of(a, q.project_id), redacted=a.redacted(Resource.PROJECT)
            ),
        )

    async def list(self, q: ListProjects, ctx: RequestContext) -> Page[Project]:
        """``ws.qry.project.list``."""

        def page(a: Access) -> Page[Project]:
            rows, total = self.app.list_projects(a, q.company_id, q.limit, q.offset)
            redacted = a.redacted(Resource.PROJECT)
            return Page(items=[project_view(p, redacted=redacted) for p in rows], total=total)

        return await self.read(q.principal, Resource.PROJECT, page)
