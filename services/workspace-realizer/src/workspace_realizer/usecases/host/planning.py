"""Plain snapshots the orchestrators work from, taken on the store's thread with access checks:
what a realization will do (reference §5.1-§5.3), and the workspace and checkout it touches."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from contracts.errors import DetailedError
from servicekit.access import AccessDeniedError
from workspace_realizer.domain.errors import (
    NotFoundError,
    RequiresProjectError,
    StateConflictError,
)
from workspace_realizer.domain.policy import Resolution, parse_policy, resolve_mode
from workspace_realizer.usecases.placement import workspace_node

if TYPE_CHECKING:
    from servicekit.access import Access
    from workspace_realizer.application import WorkspaceRealizerApplication
    from workspace_realizer.domain import ProjectWorkspace
    from workspace_realizer.domain.documents import PolicyDocument
    from workspace_realizer.domain.host import ExecutionWorkspace
    from workspace_realizer.domain.host.records import RescueRefRecord, WorkspaceConfig

__all__ = [
    "BaseCheckout",
    "RealizePlan",
    "WorkspaceSnapshot",
    "base_checkout",
    "plan_realization",
    "protected_paths",
    "realize_node",
    "snapshot",
]


@dataclass(frozen=True)
class BaseCheckout:
    """A project workspace as the host work needs it."""

    id: str
    company_id: str
    project_id: str
    cwd: str | None
    repo_url: str | None
    repo_ref: str | None
    checkout_state: str
    checkout_path: str | None
    cleanup_command: str | None


@dataclass(frozen=True)
class WorkspaceSnapshot:
    """An execution workspace as the host work needs it."""

    id: str
    company_id: str
    project_id: str
    project_workspace_id: str | None
    source_issue_id: str
    mode: str
    provider_type: str
    path: str | None
    branch_name: str | None
    base_ref: str | None
    branch_created: bool
    provision_state: str
    config: WorkspaceConfig
    status: str
    closing: bool
    generation: int
    rescue_refs: list[RescueRefRecord]
    repo_url: str | None

    @property
    def is_worktree(self) -> bool:
        """True for git worktrees Clipyard manages on disk."""
        return self.provider_type == "git_worktree"


@dataclass(frozen=True)
class RealizePlan:
    """What a realization will do, decided from the stored facts."""

    company_id: str
    issue_id: str
    identifier: str
    title: str
    project_id: str
    resolution: Resolution
    base: BaseCheckout | None
    reuse: WorkspaceSnapshot | None
    agent_id: str | None
    protected: list[str] = field(default_factory=list)


def base_checkout(workspace: ProjectWorkspace) -> BaseCheckout:
    """The snapshot of a project workspace."""
    return BaseCheckout(
        id=str(workspace.id),
        company_id=workspace.company_id,
        project_id=workspace.project_id,
        cwd=workspace.cwd,
        repo_url=workspace.repo_url,
        repo_ref=workspace.repo_ref,
        checkout_state=workspace.checkout_state,
        checkout_path=workspace.checkout_path,
        cleanup_command=workspace.cleanup_command,
    )


def snapshot(workspace: ExecutionWorkspace) -> WorkspaceSnapshot:
    """The snapshot of an execution workspace."""
    return WorkspaceSnapshot(
        id=str(workspace.id),
        company_id=workspace.company_id,
        project_id=workspace.project_id,
        project_workspace_id=workspace.project_workspace_id,
        source_issue_id=workspace.source_issue_id,
        mode=workspace.mode,
        provider_type=workspace.provider_type,
        path=workspace.provider_ref or workspace.cwd,
        branch_name=workspace.branch_name,
        base_ref=workspace.base_ref,
        branch_created=workspace.branch_created,
        provision_state=workspace.provision_state,
        config=workspace.config.copy(),
        status=workspace.status,
        closing=workspace.closing,
        generation=workspace.lifecycle_generation,
        rescue_refs=list(workspace.rescue_refs),
        repo_url=workspace.repo_url,
    )


def protected_paths(app: WorkspaceRealizerApplication, project_id: str | None = None) -> list[str]:
    """Project checkouts on this host: every one (``project_id`` None) is safe from cleanup; a
    project's worktrees never go inside one of that project's checkouts (another company's odd
    ``cwd`` must not block this one's realizations)."""
    paths = []
    for workspace in app.project_workspaces.values():
        if not workspace.deleted and project_id in (None, workspace.project_id):
            paths += [p for p in (workspace.cwd, workspace.checkout_path) if p]
    return paths


def plan_realization(
    app: WorkspaceRealizerApplication,
    access: Access,
    issue_id: str,
    mode: str | None,
    workspace_id: str | None,
    agent_id: str | None,
) -> RealizePlan:
    """Decide how to realize an issue's workspace: reuse which one, or create on which base.

    Raises:
        NotFoundError: The issue, its project or the pinned workspace is not the principal's.
        StateConflictError: The pinned workspace cannot be reused (a pin is never silently
            replaced, Paperclip #11342).
        RequiresProjectError: A checkout is needed and the project has no workspace.
    """
    issue = app.issue_of(access, issue_id)
    project = app.project_of(access, issue.project_id)
    resolution = resolve_mode(
        parse_policy(project.policy),
        requested=mode,
        settings=issue.settings,
        requested_workspace_id=workspace_id,
    )
    reuse = _reusable(
        app, access, issue.execution_workspace_id, resolution, issue.project_id, workspace_id
    )
    base_id = reuse.project_workspace_id if reuse else _base_id(app, issue, project.policy)
    base = app.project_workspaces.get(base_id or "")
    if base is not None and (base.deleted or base.company_id != issue.company_id):
        base = None
    if base is None and reuse is None and resolution.mode != "adapter_managed":
        raise RequiresProjectError(
            "The project has no project workspace to realize from; add one (cwd or repoUrl).",
            projectId=issue.project_id,
        )
    return RealizePlan(
        company_id=issue.company_id,
        issue_id=issue_id,
        identifier=issue.identifier,
        title=issue.title,
        project_id=issue.project_id,
        resolution=resolution,
        base=base_checkout(base) if base is not None else None,
        reuse=reuse,
        agent_id=agent_id,
        protected=protected_paths(app, issue.project_id),
    )


def realize_node(
    app: WorkspaceRealizerApplication,
    access: Access,
    issue_id: str,
    mode: str | None,
    workspace_id: str | None,
) -> str | None:
    """The worker node a realization of the issue runs on (docs/scale-out.md, "Worker
    nodes"): the reused workspace's, else the one holding the project workspace it branches
    from. None when neither names one (recorded before nodes, or an adapter-managed workspace
    without a base), or when the plan is refused: the node asked answers that refusal itself."""
    try:
        plan = plan_realization(app, access, issue_id, mode, workspace_id, None)
    except DetailedError:
        return None
    if plan.reuse is not None:
        return workspace_node(app, plan.reuse.id, access)
    if plan.base is not None:
        return app.project_workspaces[plan.base.id].node_id
    return None


def _reusable(
    app: WorkspaceRealizerApplication,
    access: Access,
    current_id: str | None,
    resolution: Resolution,
    project_id: str,
    requested_id: str | None = None,
) -> WorkspaceSnapshot | None:
    if resolution.reuse_workspace_id is not None:
        pinned = app.workspaces.get(resolution.reuse_workspace_id)
        if pinned is None:
            raise NotFoundError(
                f"There is no execution workspace {resolution.reuse_workspace_id} to reuse.",
                executionWorkspaceId=resolution.reuse_workspace_id,
            )
        access.check_company(pinned.company_id, "execution workspace", str(pinned.id))
        if (
            access.is_agent
            and requested_id is not None
            and not any(
                access.owns_issue(str(i.id), i.assignee_agent_id)
                for i in app.issues_linked_to(pinned)
            )
        ):
            # An agent pins only a workspace of the issues it may touch (a board key's pin in
            # the issue's settings is the board's decision).
            raise AccessDeniedError(
                f"This agent may reuse only a workspace of its own issues; {pinned.id} is not "
                "one of them.",
                executionWorkspaceId=str(pinned.id),
            )
        if pinned.project_id != project_id or not pinned.is_open or pinned.closing:
            raise StateConflictError(
                f"The pinned execution workspace {pinned.id} cannot be reused: it is "
                f"{'being archived' if pinned.closing else pinned.status}"
                f"{'' if pinned.project_id == project_id else ' and belongs to another project'}.",
                executionWorkspaceId=str(pinned.id),
            )
        return snapshot(pinned)
    current = app.workspaces.get(current_id or "")
    if current is None or not current.is_open or current.closing:
        return None
    return snapshot(current) if current.mode == resolution.mode else None


def _base_id(
    app: WorkspaceRealizerApplication, issue: Any, policy: PolicyDocument | None
) -> str | None:
    if issue.project_workspace_id:
        chosen = app.project_workspaces.get(str(issue.project_workspace_id))
        if chosen is None or not _usable(chosen, issue):
            raise RequiresProjectError(
                f"The issue's project workspace {issue.project_workspace_id} was deleted; choose "
                "another one for the issue (projectWorkspaceId) or clear it.",
                projectWorkspaceId=str(issue.project_workspace_id),
            )
        return str(chosen.id)
    default = parse_policy(policy).default_project_workspace_id
    found = app.project_workspaces.get(default or "")
    if found is not None and _usable(found, issue):
        return str(found.id)
    candidates = sorted(
        (
            w
            for w in app.project_workspaces.values()
            if w.project_id == issue.project_id and not w.deleted
        ),
        key=lambda w: (not w.is_primary, w.created_on),
    )
    return str(candidates[0].id) if candidates else None


def _usable(workspace: ProjectWorkspace, issue: Any) -> bool:
    """A live project workspace of the issue's own company and project."""
    return (
        not workspace.deleted
        and workspace.company_id == issue.company_id
        and workspace.project_id == issue.project_id
    )
