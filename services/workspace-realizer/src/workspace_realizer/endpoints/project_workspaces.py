"""Endpoints of project workspaces in the company-wide part: delete, read and list. Creating and
changing one checks its paths on a host and may clone its repository there, so those two are the
host part's (:mod:`workspace_realizer.endpoints.host.project_sources`, subjects that name the node).

Agent keys and run tokens read them redacted (``Reach.REDACTED``, ARCHITECTURE §5.1): no ``env``
values and no host paths (:func:`~workspace_realizer.usecases.views.project_workspace_view`); only
the board writes them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import contracts.workspace_subjects as subjects
from contracts.workspace_commands import (
    DeleteProjectWorkspace,
    GetProjectWorkspace,
    ListProjectWorkspaces,
)
from contracts.workspace_views import Deleted, Page
from servicekit.access import Access, Resource
from servicekit.routes import Route
from workspace_realizer.endpoints.common import Endpoints
from workspace_realizer.usecases.views import project_workspace_view

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contracts.workspace_views import ProjectWorkspace
    from natsbus import RequestContext

__all__ = ["ProjectWorkspaceEndpoints"]

PW = Resource.PROJECT_WORKSPACE


class ProjectWorkspaceEndpoints(Endpoints):
    """Delete, read and list project workspaces."""

    def routes(self) -> Sequence[Route]:
        """The project-workspace endpoints of the company-wide part (create and update are the
        host part's: :mod:`workspace_realizer.endpoints.host.project_sources`)."""
        return (
            Route(
                "project_workspace_delete",
                subjects.PROJECT_WORKSPACE_DELETE,
                self.delete,
                DeleteProjectWorkspace,
            ),
            Route(
                "project_workspace_get",
                subjects.PROJECT_WORKSPACE_GET,
                self.get,
                GetProjectWorkspace,
            ),
            Route(
                "project_workspace_list",
                subjects.PROJECT_WORKSPACE_LIST,
                self.list,
                ListProjectWorkspaces,
            ),
        )

    async def delete(self, c: DeleteProjectWorkspace, ctx: RequestContext) -> Deleted:
        """``ws.cmd.project_workspace.delete``."""
        await self.write(
            c.principal,
            PW,
            "delete project workspace",
            lambda a: self.app.delete_project_workspace(a, c.project_id, c.workspace_id),
        )
        return Deleted(id=c.workspace_id)

    async def get(self, q: GetProjectWorkspace, ctx: RequestContext) -> ProjectWorkspace:
        """``ws.qry.project_workspace.get``."""
        return await self.read(
            q.principal,
            PW,
            lambda a: project_workspace_view(
                self.app.project_workspace_of(a, q.project_id, q.workspace_id),
                redacted=a.redacted(PW),
            ),
        )

    async def list(self, q: ListProjectWorkspaces, ctx: RequestContext) -> Page[ProjectWorkspace]:
        """``ws.qry.project_workspace.list``."""

        def page(a: Access) -> Page[ProjectWorkspace]:
            rows, total = self.app.list_project_workspaces(a, q.project_id, q.limit, q.offset)
            redacted = a.redacted(PW)
            return Page(
                items=[project_workspace_view(w, redacted=redacted) for w in rows], total=total
            )

        return await self.read(q.principal, PW, page)
