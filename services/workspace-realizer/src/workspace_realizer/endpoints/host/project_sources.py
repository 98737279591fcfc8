"""Endpoints of the host part that create and change project workspaces: a ``cwd`` or local
``repoUrl`` is checked against this host (:class:`~workspace_realizer.usecases.ports.HostPaths`),
and a repo-only workspace is cloned here as a long operation when it is created, or when its
repository changes (:class:`~workspace_realizer.usecases.ports.ManagedCheckouts`). Their subjects
name the node. Deleting, reading and listing them is the company-wide part's
(:mod:`workspace_realizer.endpoints.project_workspaces`)."""

from __future__ import annotations

import contextlib
from functools import partial
from typing import TYPE_CHECKING

import msgspec

import contracts.workspace_subjects as subjects
from contracts.errors import DetailedError
from contracts.workspace_commands import CreateProjectWorkspace, UpdateProjectWorkspace
from eventstore import acting
from servicekit.access import Action, Resource
from servicekit.routes import Route
from workspace_realizer.domain.errors import CheckoutFailedError
from workspace_realizer.endpoints.common import Endpoints, builtins, cause_of
from workspace_realizer.usecases.views import project_workspace_view

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contracts.base import Accepted, ErrorReply, Ok, Principal
    from contracts.workspace_views import ProjectWorkspace
    from natsbus import RequestContext
    from servicekit import ServiceRuntime
    from servicekit.access import Access
    from workspace_realizer.application import WorkspaceRealizerApplication
    from workspace_realizer.domain.documents import ProjectWorkspaceFields
    from workspace_realizer.usecases.ports import ManagedCheckouts

__all__ = ["ProjectSourceEndpoints", "project_workspace_changes", "project_workspace_node"]

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


def project_workspace_node(
    app: WorkspaceRealizerApplication, access: Access, project_id: str, workspace_id: str
) -> str | None:
    """The node that holds the checkout of a project workspace ``access`` may see (None:
    recorded before nodes, or not found or not the principal's: served where it was asked,
    which answers that)."""
    try:
        return app.project_workspace_of(access, project_id, workspace_id).node_id
    except DetailedError:
        return None


class ProjectSourceEndpoints(Endpoints):
    """Create and change project workspaces on this node."""

    def __init__(self, runtime: ServiceRuntime, checkouts: ManagedCheckouts) -> None:
        super().__init__(runtime)
        self.checkouts = checkouts

    def routes(self) -> Sequence[Route]:
        """The two project-workspace endpoints of this node."""
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
            lambda a: self.app.create_project_workspace(
                a, c.project_id, fields, config, node_id=self.node
            ),
        )
        return await self._checkout(c.principal, str(created.id), created.repo_only, ctx)

    async def update(
        self, c: UpdateProjectWorkspace, ctx: RequestContext
    ) -> ProjectWorkspace | Accepted | Ok | ErrorReply:
        """``ws.cmd.project_workspace.update.<node>``: cloned again when the source changed, on
        the node that holds it (sent on there from any other)."""
        access = self.allow(c.principal, PW, Action.WRITE)
        moved = await self.elsewhere(
            lambda: project_workspace_node(self.app, access, c.project_id, c.workspace_id),
            subjects.update_project_workspace,
            c,
            ctx,
            f"project workspace {c.workspace_id}",
        )
        if moved is not None:
            return moved
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
