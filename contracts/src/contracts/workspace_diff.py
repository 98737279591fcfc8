"""What an execution workspace changed against its base: ``GET
/api/execution-workspaces/{id}/diff`` (``ws.qry.workspace.diff``, answered on the workspace's
node, which runs git).

The diff is from the merge base of the workspace's branch and its base ref to the worktree as it
is now: committed, staged and unstaged changes together; untracked files are listed apart. Every
list and the unified diff of one file are capped; a capped part says so (``...Truncated``) and
how much there was.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from contracts.base import Query, Struct

__all__ = [
    "MAX_DIFF_COMMITS",
    "MAX_DIFF_FILES",
    "MAX_FILE_PATCH_BYTES",
    "ChangedFile",
    "DiffCommit",
    "FilePatch",
    "FileStatus",
    "GetWorkspaceDiff",
    "WorkspaceDiff",
]

MAX_DIFF_COMMITS = 200
"""Commits listed at most (newest first)."""
MAX_DIFF_FILES = 1000
"""Changed files, and untracked files, listed at most."""
MAX_FILE_PATCH_BYTES = 256 * 1024
"""Bytes of one file's unified diff at most."""

FileStatus = Literal[
    "added", "modified", "deleted", "renamed", "copied", "type_changed", "unmerged", "unknown"
]


class GetWorkspaceDiff(Query, tag="workspace.get_diff.v1", frozen=True, kw_only=True):
    """What the workspace changed against its base → ``WorkspaceDiff``; with ``path`` (a changed
    or untracked file of the list, as listed), that file's unified diff as well."""

    workspace_id: str
    path: str | None = None


class DiffCommit(Struct, frozen=True, kw_only=True):
    """A commit of the workspace's branch that its base does not have."""

    sha: str
    subject: str
    author_name: str
    committed_at: datetime


class ChangedFile(Struct, frozen=True, kw_only=True):
    """A file that differs between the merge base and the worktree."""

    path: str
    status: FileStatus
    old_path: str | None = None
    """The path it had at the merge base, when renamed or copied."""
    additions: int | None = None
    """Lines added (``None`` for a binary file)."""
    deletions: int | None = None
    binary: bool = False


class FilePatch(Struct, frozen=True, kw_only=True):
    """One file's unified diff (``text`` is UTF-8, undecodable bytes replaced)."""

    path: str
    text: str
    truncated: bool = False
    """Cut at :data:`MAX_FILE_PATCH_BYTES`; ``text`` ends with a line that says so."""
    total_bytes: int


class WorkspaceDiff(Struct, frozen=True, kw_only=True):
    """``GET /api/execution-workspaces/{id}/diff``."""

    workspace_id: str
    available: bool
    """False when there is no worktree to compare (not a git worktree, or gone): ``reason`` says
    why, and the lists are empty."""
    reason: str | None = None
    base_ref: str | None = None
    merge_base: str | None = None
    """``None`` when the base is unknown or shares no history: then only the changes since
    ``HEAD`` are listed."""
    head_sha: str | None = None
    commits: list[DiffCommit] = []
    commits_total: int = 0
    commits_truncated: bool = False
    files: list[ChangedFile] = []
    files_total: int = 0
    files_truncated: bool = False
    additions: int = 0
    """Lines added over every changed file that is not binary (listed or not)."""
    deletions: int = 0
    untracked: list[str] = []
    untracked_total: int = 0
    untracked_truncated: bool = False
    patch: FilePatch | None = None
