"""Close readiness (reference §5.8, DECISIONS 3): may a workspace be archived, what would it do?

Blocks are only those of the reference: git state that cannot be read, and open linked issues on a
workspace that is not shared. A dirty tree, untracked files and undelivered commits are warnings:
archive writes a rescue ref first (DECISIONS 3). Pure: the caller inspects git beforehand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from workspace_realizer.adapters.ports import GitInspection
from workspace_realizer.domain.host.delivery import DELIVERED
from workspace_realizer.domain.host.records import CloseStep

__all__ = [
    "CloseContext",
    "LinkedIssueFacts",
    "Readiness",
    "branch_deletion",
    "close_readiness",
    "needs_rescue",
    "rescue_ref_name",
]


def rescue_ref_name(workspace_id: str, generation: int) -> str:
    """``refs/clipyard/rescue/<workspaceId>/<generation>`` (DECISIONS 3)."""
    return f"refs/clipyard/rescue/{workspace_id}/{generation}"


@dataclass(frozen=True)
class LinkedIssueFacts:
    """An issue linked to the workspace (its source, or one whose current workspace it is)."""

    id: str
    identifier: str
    title: str
    status: str
    is_terminal: bool


@dataclass(frozen=True)
class CloseContext:
    """Everything close readiness looks at, gathered by the caller."""

    workspace_id: str
    mode: str
    is_worktree: bool
    path: str | None
    branch_name: str | None
    base_ref: str | None
    branch_created: bool
    next_generation: int
    inspection: GitInspection | None
    linked: list[LinkedIssueFacts]
    delivery_state: str
    commits_ahead: int | None
    commands: list[tuple[str, str, str]] = field(default_factory=list)
    """``(kind, label, command)`` of the cleanup and teardown commands, in the order they run."""
    running_services: int = 0


@dataclass(frozen=True)
class Readiness:
    """The verdict and the plan."""

    state: Literal["ready", "ready_with_warnings", "blocked"]
    blocking_reasons: list[str]
    warnings: list[str]
    planned_actions: list[CloseStep]
    is_shared: bool
    needs_rescue: bool
    delete_branch: bool
    branch_kept_reason: str | None


def needs_rescue(inspection: GitInspection | None, delivery_state: str) -> bool:
    """True when removing the worktree would lose changes or undelivered commits."""
    if inspection is None or not inspection.exists:
        return False
    ahead = inspection.delivery.commits_ahead or 0
    return bool(
        inspection.dirty_count
        or inspection.untracked_count
        or (delivery_state not in DELIVERED and ahead > 0)
        or not inspection.readable
    )


def branch_deletion(context: CloseContext) -> tuple[bool, str | None]:
    """Whether archive may delete the branch (DECISIONS 3), and why not when it may not."""
    if not context.is_worktree or not context.branch_name:
        return False, None
    if not context.branch_created:
        return False, "Clipyard did not create this branch"
    if context.delivery_state in DELIVERED or context.commits_ahead == 0:
        return True, None
    return False, f"the branch is not delivered (delivery state {context.delivery_state})"


def close_readiness(context: CloseContext) -> Readiness:
    """Compute the verdict, warnings and planned actions of archiving ``context``'s workspace."""
    shared = context.mode == "shared_workspace"
    inspection = context.inspection
    blocking: list[str] = []
    warnings: list[str] = []
    open_linked = [issue for issue in context.linked if not issue.is_terminal]
    if inspection is not None and inspection.exists and not inspection.readable:
        blocking.append(
            f"Git status could not be verified ({inspection.error or 'unreadable'}). "
            "Retry before destructive cleanup."
        )
    if open_linked and not shared:
        names = ", ".join(issue.identifier for issue in open_linked)
        blocking.append(
            f"This workspace is still linked to {len(open_linked)} open issue(s): {names}."
        )
    if shared:
        warnings.append(
            "This is a shared workspace: archiving removes only its record; nothing on disk is "
            "deleted."
        )
        if open_linked:
            warnings.append(f"{len(open_linked)} open issue(s) will be detached from it.")
    if context.running_services:
        warnings.append(
            f"Closing this workspace will stop {context.running_services} attached runtime service(s)."
        )
    warnings += _git_warnings(context)
    rescue = context.is_worktree and needs_rescue(inspection, context.delivery_state)
    delete_branch, kept = branch_deletion(context)
    state: Literal["ready", "ready_with_warnings", "blocked"] = (
        "blocked" if blocking else "ready_with_warnings" if warnings else "ready"
    )
    return Readiness(
        state=state,
        blocking_reasons=blocking,
        warnings=warnings,
        planned_actions=_plan(context, rescue=rescue, delete_branch=delete_branch),
        is_shared=shared,
        needs_rescue=rescue,
        delete_branch=delete_branch,
        branch_kept_reason=kept,
    )


def _git_warnings(context: CloseContext) -> list[str]:
    inspection = context.inspection
    if not context.is_worktree or inspection is None:
        return []
    if not inspection.exists:
        return [f"The workspace path {context.path} no longer exists; nothing on disk to remove."]
    warnings: list[str] = []
    if inspection.dirty_count:
        warnings.append(
            f"The workspace has {inspection.dirty_count} modified tracked file(s); a rescue ref "
            "will keep them."
        )
    if inspection.untracked_count:
        warnings.append(
            f"The workspace has {inspection.untracked_count} untracked file(s); a rescue ref "
            "will keep them."
        )
    ahead, behind = inspection.ahead or 0, inspection.behind or 0
    branch, base = context.branch_name or "HEAD", context.base_ref or "the base"
    if ahead and context.delivery_state not in DELIVERED:
        warnings.append(
            f"Branch {branch} is {ahead} commit(s) ahead of {base} and is not merged; a rescue "
            "ref will keep them and the branch is kept."
        )
    if behind:
        warnings.append(f"Branch {branch} is {behind} commit(s) behind {base}.")
    return warnings


def _action(kind: str, label: str, command: str | None = None) -> CloseStep:
    return {"kind": kind, "label": label, "command": command}


def _plan(context: CloseContext, *, rescue: bool, delete_branch: bool) -> list[CloseStep]:
    actions = [
        _action("archive_record", "Archive the workspace record"),
        _action("stop_runtime_services", "Ask the runtime supervisor to stop its services"),
    ]
    actions += [_action(kind, label, command) for kind, label, command in context.commands]
    exists = context.inspection is not None and context.inspection.exists
    if context.is_worktree and exists and rescue:
        ref = rescue_ref_name(context.workspace_id, context.next_generation)
        actions.append(_action("write_rescue_ref", "Keep uncommitted and undelivered work", ref))
    if context.is_worktree and exists:
        command = f"git worktree remove --force {context.path}"
        actions.append(_action("git_worktree_remove", "Remove the worktree", command))
    if delete_branch and context.branch_name:
        command = f"git update-ref -d refs/heads/{context.branch_name} <checked sha>"
        actions.append(_action("git_branch_delete", "Delete the branch Clipyard created", command))
    return actions
