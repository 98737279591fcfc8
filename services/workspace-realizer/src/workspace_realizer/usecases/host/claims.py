"""Who owns a worktree path or branch, checked on the store's thread before any host work: a
realization or reopen never lays a tree over one another open workspace owns, and a reuse
re-checks, under the workspace's lock, that the workspace it planned on is still open."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from workspace_realizer.domain.errors import StateConflictError
from workspace_realizer.usecases.host.planning import WorkspaceSnapshot, snapshot

if TYPE_CHECKING:
    from workspace_realizer.application import WorkspaceRealizerApplication
    from workspace_realizer.domain.host import ExecutionWorkspace

__all__ = ["check_unclaimed", "current_reusable", "path_recorded", "worktree_lock"]


def worktree_lock(path: str) -> str:
    """The lock key of a worktree path (taken innermost: after ``issue:`` or ``workspace:``)."""
    return f"worktree:{os.path.normpath(path)}"


def _path(workspace: ExecutionWorkspace) -> str | None:
    path = workspace.provider_ref or workspace.cwd
    return os.path.normpath(path) if path else None


def check_unclaimed(
    app: WorkspaceRealizerApplication,
    *,
    path: str,
    branch: str | None,
    project_workspace_id: str | None,
    exclude: str | None = None,
) -> None:
    """Refuse when another open (or closing) worktree workspace records ``path``, or ``branch``
    in the same project workspace's repository.

    Raises:
        StateConflictError: Naming the workspace that owns the path or branch.
    """
    wanted = os.path.normpath(path)
    for other in app.workspaces.values():
        if str(other.id) == exclude or other.provider_type != "git_worktree":
            continue
        if not (other.is_open or other.closing):
            continue
        same_path = _path(other) == wanted
        same_branch = (
            branch is not None
            and other.branch_name == branch
            and other.project_workspace_id == project_workspace_id
        )
        if same_path or same_branch:
            what = f'the worktree "{wanted}"' if same_path else f'the branch "{branch}"'
            raise StateConflictError(
                f"The open execution workspace {other.id} owns {what}; archive it first.",
                executionWorkspaceId=str(other.id),
                path=wanted,
                branch=branch,
            )


def path_recorded(app: WorkspaceRealizerApplication, path: str) -> bool:
    """True when any execution workspace (in any status) records ``path`` as its worktree."""
    wanted = os.path.normpath(path)
    return any(_path(ws) == wanted for ws in app.workspaces.values())


def current_reusable(
    app: WorkspaceRealizerApplication, planned: WorkspaceSnapshot
) -> WorkspaceSnapshot:
    """The workspace a reuse was planned on, as it is now (call under its ``workspace:`` lock).

    Raises:
        StateConflictError: It was archived, is being archived, or its lifecycle moved on
            (reopened or archived and reopened) since the plan was taken.
    """
    current = app.workspaces.get(planned.id)
    if (
        current is None
        or not current.is_open
        or current.closing
        or current.lifecycle_generation != planned.generation
    ):
        state = "gone" if current is None else ("being archived" if current.closing else None)
        raise StateConflictError(
            f"The execution workspace {planned.id} changed while it was being reused "
            f"({state or (current.status if current else 'gone')}); realize again.",
            executionWorkspaceId=planned.id,
        )
    return snapshot(current)
