"""A workspace's diff against its base (``ws.qry.workspace.diff``): git on the workspace's node,
for a git worktree that is still on disk; for anything else, an answer that says why there is
nothing to compare."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from contracts.workspace_diff import WorkspaceDiff
from servicekit import NotFoundError
from workspace_realizer.adapters import fs
from workspace_realizer.adapters.worktree_diff import NotAChangedFileError

if TYPE_CHECKING:
    from workspace_realizer.orchestration.context import Realizer
    from workspace_realizer.orchestration.facts import CloseFacts

__all__ = ["workspace_diff"]


async def workspace_diff(ctx: Realizer, facts: CloseFacts, file: str | None) -> WorkspaceDiff:
    """The diff of the workspace of ``facts``, with ``file``'s unified diff when asked.

    Raises:
        NotFoundError: ``file`` is not a changed or untracked file of the workspace.
    """
    ws = facts.workspace
    reason = None
    if not ws.is_worktree:
        reason = (
            f"a {ws.mode} workspace has no worktree of its own to compare; "
            "only isolated workspaces (git worktrees) have a diff"
        )
    elif not ws.path or not fs.is_dir(ws.path):
        reason = "its worktree is no longer on disk (archived or removed); reopen it to compare"
    if reason is not None:
        return WorkspaceDiff(
            workspace_id=ws.id, available=False, reason=reason, base_ref=ws.base_ref
        )
    try:
        return await ctx.ports.git.diff(
            workspace_id=ws.id, path=Path(str(ws.path)), base_ref=ws.base_ref, file=file
        )
    except NotAChangedFileError as error:
        raise NotFoundError(
            f"{error}; ask for a path the diff lists", workspaceId=ws.id, path=file
        ) from None
