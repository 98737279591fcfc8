"""Endpoints of projects and project workspaces (a repo-only workspace is cloned as a long
operation when it is created, or when its repository changes).

Agent keys and run tokens read both redacted (``Reach.REDACTED``, ARCHITECTURE §5.1): no ``env``
values and no host paths (:func:`~workspace_realizer.views.project_workspace_view`); only the
board writes them."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import msgspec

import contracts.workspace_subjects as subjects
from contracts.workspace_commands import (
    CreateProject,
    CreateProjectWorkspace,
    DeleteProject,
    DeleteProjectWorkspace,
    GetProject,
    GetProjectWorkspace,
    ListProjects,
    ListProjectWorkspaces,
    UpdateProject,
    UpdateProjectWorkspace,
)
from contracts.workspace_views import Deleted, Page
from eventstore import acting
from servicekit.access import Access, Resource
from workspace_realizer.clone import ensure_checkout
from workspace_realizer.domain.errors import CheckoutFailedError
from workspace_realizer.endpoints.common import Endpoints, builtins, cause_of, changes
from workspace_realizer.views import project_view, project_workspace_view

if TYPE_CHECKING:
    from contracts.base import Accepted, Principal
    from contracts.workspace_views import Project, ProjectWorkspace
    from natsbus import RequestContext

__all__ = ["register_catalog"]

_PW_FIELDS = {
    "name": "name",
    "cwd": "cwd",
    "repo_url": "repo_url",
    "repo_ref": "repo_ref",
    "is_primary": "is_primary",
    "setup_command": "setup_command",
    "cleanup_command": "cleanup_command",
}


async def register_catalog(e: Endpoints) -> None:
    """Add the project and project-workspace endpoints."""
    app = e.app

    async def create_project(c: CreateProject, ctx: RequestContext) -> Project:
        policy = builtins(c.execution_workspace_policy)
        return await e.write(
            c.principal,
            Resource.PROJECT,
            "create project",
            lambda a: project_view(app.create_project(a, c.company_id, c.name, policy)),
        )

    async def update_project(c: UpdateProject, ctx: RequestContext) -> Project:
        name = None if c.name is msgspec.UNSET else c.name
        policy = (
            None
            if c.execution_workspace_policy is msgspec.UNSET
            else builtins(c.execution_workspace_policy)
        )
        return await e.write(
            c.principal,
            Resource.PROJECT,
            "update project",
            lambda a: project_view(app.update_project(a, c.project_id, name, policy)),
        )

    async def delete_project(c: DeleteProject, ctx: RequestContext) -> Deleted:
        await e.write(
            c.principal,
            Resource.PROJECT,
            "delete project",
            lambda a: app.delete_project(a, c.project_id),
        )
        return Deleted(id=c.project_id)

    async def get_project(q: GetProject, ctx: RequestContext) -> Project:
        return await e.read(
            q.principal,
            Resource.PROJECT,
            lambda a: project_view(
                app.project_of(a, q.project_id), redacted=a.redacted(Resource.PROJECT)
            ),
        )

    async def list_projects(q: ListProjects, ctx: RequestContext) -> Page[Project]:
        def page(a: Access) -> Page[Project]:
            rows, total = app.list_projects(a, q.company_id, q.limit, q.offset)
            redacted = a.redacted(Resource.PROJECT)
            return Page(items=[project_view(p, redacted=redacted) for p in rows], total=total)

        return await e.read(q.principal, Resource.PROJECT, page)

    async def create_workspace(
        c: CreateProjectWorkspace, ctx: RequestContext
    ) -> ProjectWorkspace | Accepted:
        fields = {name: getattr(c, attribute) for attribute, name in _PW_FIELDS.items()}
        config = builtins(c.runtime_config)
        created = await e.write(
            c.principal,
            Resource.PROJECT_WORKSPACE,
            "add project workspace",
            lambda a: app.create_project_workspace(a, c.project_id, fields, config),
        )
        return await _checkout(e, c.principal, str(created.id), created.repo_only, ctx)

    async def update_workspace(
        c: UpdateProjectWorkspace, ctx: RequestContext
    ) -> ProjectWorkspace | Accepted:
        patch = changes(c, _PW_FIELDS)
        config = None if c.runtime_config is msgspec.UNSET else (builtins(c.runtime_config),)
        updated = await e.write(
            c.principal,
            Resource.PROJECT_WORKSPACE,
            "update project workspace",
            lambda a: app.update_project_workspace(a, c.project_id, c.workspace_id, patch, config),
        )
        needs_clone = updated.repo_only and updated.checkout_state == "none"
        return await _checkout(e, c.principal, c.workspace_id, needs_clone, ctx)

    async def delete_workspace(c: DeleteProjectWorkspace, ctx: RequestContext) -> Deleted:
        await e.write(
            c.principal,
            Resource.PROJECT_WORKSPACE,
            "delete project workspace",
            lambda a: app.delete_project_workspace(a, c.project_id, c.workspace_id),
        )
        return Deleted(id=c.workspace_id)

    async def get_workspace(q: GetProjectWorkspace, ctx: RequestContext) -> ProjectWorkspace:
        return await e.read(
            q.principal,
            Resource.PROJECT_WORKSPACE,
            lambda a: project_workspace_view(
                app.project_workspace_of(a, q.project_id, q.workspace_id),
                redacted=a.redacted(Resource.PROJECT_WORKSPACE),
            ),
        )

    async def list_workspaces(
        q: ListProjectWorkspaces, ctx: RequestContext
    ) -> Page[ProjectWorkspace]:
        def page(a: Access) -> Page[ProjectWorkspace]:
            rows, total = app.list_project_workspaces(a, q.project_id, q.limit, q.offset)
            redacted = a.redacted(Resource.PROJECT_WORKSPACE)
            items = [project_workspace_view(w, redacted=redacted) for w in rows]
            return Page(items=items, total=total)

        return await e.read(q.principal, Resource.PROJECT_WORKSPACE, page)

    await e.add("project_create", subjects.PROJECT_CREATE, create_project, CreateProject)
    await e.add("project_update", subjects.PROJECT_UPDATE, update_project, UpdateProject)
    await e.add("project_delete", subjects.PROJECT_DELETE, delete_project, DeleteProject)
    await e.add("project_get", subjects.PROJECT_GET, get_project, GetProject)
    await e.add("project_list", subjects.PROJECT_LIST, list_projects, ListProjects)
    await e.add(
        "project_workspace_create",
        subjects.create_project_workspace(e.node),
        create_workspace,
        CreateProjectWorkspace,
    )
    await e.add(
        "project_workspace_update",
        subjects.update_project_workspace(e.node),
        update_workspace,
        UpdateProjectWorkspace,
    )
    await e.add(
        "project_workspace_delete",
        subjects.PROJECT_WORKSPACE_DELETE,
        delete_workspace,
        DeleteProjectWorkspace,
    )
    await e.add(
        "project_workspace_get", subjects.PROJECT_WORKSPACE_GET, get_workspace, GetProjectWorkspace
    )
    await e.add(
        "project_workspace_list",
        subjects.PROJECT_WORKSPACE_LIST,
        list_workspaces,
        ListProjectWorkspaces,
    )


async def _checkout(
    e: Endpoints, principal: Principal, workspace_id: str, clone: bool, ctx: RequestContext
) -> ProjectWorkspace | Accepted:
    """The workspace's view, after cloning it first (as a long operation) when asked to; a
    failed clone answers the view with ``managedCheckout.state=failed``."""

    async def view() -> ProjectWorkspace:
        return await e.runtime.store(
            lambda: project_workspace_view(e.app.project_workspaces[workspace_id])
        )

    if not clone:
        return await view()

    async def work(operation_id: str) -> ProjectWorkspace:
        # The record is saved already: a failed clone is an outcome (``managedCheckout.state``
        # ``failed`` with its error; a later realize clones again), never an error reply that
        # would make a client retry and create a duplicate.
        with contextlib.suppress(CheckoutFailedError):
            await ensure_checkout(e.realizer, workspace_id, operation_id)
        return await view()

    with acting(cause_of(principal, "managed clone")):
        return await e.runtime.operations.run(
            "managed_clone",
            work,
            ctx=ctx,
            principal=principal,
            company_id=principal.company_id,
            subject_id=workspace_id,
        )
