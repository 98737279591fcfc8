"""Endpoints of project workspaces (a repo-only workspace is cloned as a long operation when it
is created, or when its repository changes, through the host part's
:class:`~workspace_realizer.usecases.ports.ManagedCheckouts`).

Agent keys and run tokens read them redacted (``Reach.REDACTED``, ARCHITECTURE §5.1): no ``env``
values and no host paths (:func:`~workspace_realizer.usecases.views.project_workspace_view`); only
the board writes them."""

from __future__ import annotations

import contextlib
from functools import partial
from typing import TYPE_CHECKING

import msgspec

import contracts.workspace_subjects as subjects
from contracts.workspace_commands import (
    CreateProjectWorkspace,
    DeleteProjectWorkspace,
    GetProjectWorkspace,
    ListProjectWorkspaces,
    UpdateProjectWorkspace,
)
from contracts.workspace_views import Deleted, Page
from eventstore import acting
from servicekit.access import Access, Resource
from servicekit.routes import Route
from workspace_realizer.domain.errors import CheckoutFailedError
from workspace_realizer.endpoints.common import Endpoints, builtins, cause_of
from workspace_realizer.usecases.views import project_workspace_view

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contracts.base import Accepted, Principal
    from contracts.workspace_views import ProjectWorkspace
    from natsbus import RequestContext
    from servicekit import ServiceRuntime
    from workspace_realizer.domain.documents import ProjectWorkspaceFields
    from workspace_realizer.usecases.ports import ManagedCheckouts

__all__ = ["ProjectWorkspaceEndpoints"]

PW = Resource.PROJECT_WORKSPACE


def project_workspace_changes(c: UpdateProjectWorkspace) -> ProjectWorkspaceFields:
    """The record's fields an update sets (not its runtime config), in the request's order."""
    patch: ProjectWorkspaceFields = {}
    if c.name is not msgspec.UNSET:
        patch["name"] = c.name
    if c.cwd is not msgspec.UNSET:
        patch["cwd"] = c.cwd
    if c.repo_url is not msgspec.UNSET:
        patch["repo_url"] = c.repo_url
    if c.repo_ref is not msgspec.UNSET:
        patch["repo_ref"] = c.repo_ref
    if c.is_primary is not msgspec.UNSET:
        patch["is_primary"] = c.is_primary
    if c.setup_command is not msgspec.UNSET:
        patch["setup_command"] = c.setup_command
    if c.cleanup_command is not msgspec.UNSET:
        patch["cleanup_command"] = c.cleanup_command
    return patch


class ProjectWorkspaceEndpoints(Endpoints):
    """Create, change, delete, read and list project workspaces."""

    def __init__(self, runtime: ServiceRuntime, checkouts: ManagedCheckouts) -> None:
        super().__init__(runtime)
        self.checkouts = checkouts

    def routes(self) -> Sequence[Route]:
        """The project-workspace endpoints (create and update carry the node: they may clone)."""
        return (
            Route(
                "project_workspace_create",
                subjects.create_project_workspace(self.node),
                self.create,
                CreateProjectWorkspace,
            ),
            Route(
                "project_workspace_update",
                subjects.update_project_workspace(self.node),
                self.update,
                UpdateProjectWorkspace,
            ),
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

    async def create(
        self, c: CreateProjectWorkspace, ctx: RequestContext
    ) -> ProjectWorkspace | Accepted:
        """``ws.cmd.project_workspace.create.<node>``: cloned at once when repo-only."""
        fields: ProjectWorkspaceFields = {
            "name": c.name,
            "cwd": c.cwd,
            "repo_url": c.repo_url,
            "repo_ref": c.repo_ref,
            "is_primary": c.is_primary,
            "setup_command": c.setup_command,
            "cleanup_command": c.cleanup_command,
        }
        config = builtins(c.runtime_config)
        created = await self.write(
            c.principal,
            PW,
            "add project workspace",
            lambda a: self.app.create_project_workspace(a, c.project_id, fields, config),
        )
        return await self._checkout(c.principal, str(created.id), created.repo_only, ctx)

    async def update(
        self, c: UpdateProjectWorkspace, ctx: RequestContext
    ) -> ProjectWorkspace | Accepted:
        """``ws.cmd.project_workspace.update.<node>``: cloned again when the source changed."""
        patch = project_workspace_changes(c)
        config = None if c.runtime_config is msgspec.UNSET else (builtins(c.runtime_config),)
        updated = await self.write(
            c.principal,
            PW,
            "update project workspace",
            lambda a: self.app.update_project_workspace(
                a, c.project_id, c.workspace_id, patch, config
            ),
        )
        return await self._checkout(c.principal, c.workspace_id, updated.needs_clone, ctx)

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

    async def _view(self, workspace_id: str) -> ProjectWorkspace:
        return await self.runtime.store(
            lambda: project_workspace_view(self.app.project_workspaces[workspace_id])
        )

    async def _clone(self, workspace_id: str, operation_id: str) -> ProjectWorkspace:
        # The record is saved already: a failed clone is an outcome (``managedCheckout.state``
        # ``failed`` with its error; a later realize clones again), never an error reply that
        # would make a client retry and create a duplicate.
        with contextlib.suppress(CheckoutFailedError):
            await self.checkouts.ensure(workspace_id, operation_id)
        return await self._view(workspace_id)

    async def _checkout(
        self, principal: Principal, workspace_id: str, clone: bool, ctx: RequestContext
    ) -> ProjectWorkspace | Accepted:
        """The workspace's view, after cloning it first (as a long operation) when asked to; a
        failed clone answers the view with ``managedCheckout.state=failed``."""
        if not clone:
            return await self._view(workspace_id)
        with acting(cause_of(principal, "managed clone")):
            return await self.runtime.operations.run(
                "managed_clone",
                partial(self._clone, workspace_id),
                ctx=ctx,
                principal=principal,
                company_id=principal.company_id,
                subject_id=workspace_id,
            )
