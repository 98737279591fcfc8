"""The ports between the realizer's use cases and the host: git, shell commands, credentials,
pull-request facts. Real implementations live beside this module; tests use fakes of the same
Protocols (the providers' ports, credentials and pull-request facts, are
:mod:`~workspace_realizer.adapters.provider_ports`, re-exported here). Every host step is reported to a :class:`StepSink` so it becomes a workspace operation.

All methods are async: git and shell work runs as subprocesses, never on the store's thread.
Work on one repository is serialized by the git adapter itself (git fails on concurrent
``worktree add`` / ``fetch`` in one repository).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal, Protocol

from contracts.errors import ErrorCode
from contracts.workspace_diff import WorkspaceDiff
from workspace_realizer.adapters.provider_ports import (
    CredentialPort,
    GitInvocation,
    PullRequestFacts,
    PullRequestPort,
)

__all__ = [
    "BaseRef",
    "CommandResult",
    "CommandRunner",
    "CredentialPort",
    "DeliveryFacts",
    "GitInspection",
    "GitInvocation",
    "GitPort",
    "HostOperationError",
    "ManagedClone",
    "PullRequestFacts",
    "PullRequestPort",
    "ReconcileOutcome",
    "RescueRef",
    "Step",
    "StepSink",
    "WorktreeOutcome",
]

Phase = Literal[
    "managed_clone",
    "worktree_prepare",
    "workspace_provision",
    "workspace_teardown",
    "worktree_cleanup",
    "workspace_finalize",
    "workspace_rescue",
    "workspace_restore",
    "branch_reconcile",
]
StepStatus = Literal["succeeded", "failed", "skipped"]

OUTPUT_CAP = 256 * 1024
"""Bytes of each stream kept per step (the tail, with ``truncated``)."""


@dataclass(frozen=True, kw_only=True)
class Step:
    """One git or shell step on the host, as it becomes a workspace operation."""

    phase: Phase
    command: str
    """For display: argv joined and quoted; never holds a credential."""
    cwd: str
    status: StepStatus
    exit_code: int | None
    stdout: bytes = b""
    """The last ``OUTPUT_CAP`` bytes of stdout, URL secrets scrubbed."""
    stderr: bytes = b""
    truncated: bool = False
    started_at: datetime
    finished_at: datetime
    metadata: Mapping[str, object] = field(default_factory=dict)


class HostOperationError(Exception):
    """A host step that cannot be done as asked (a refused path, a failed clone, a worktree that
    is not reusable). ``code``/``status``/``details`` map straight to an error reply; the message
    never holds a credential."""

    def __init__(
        self,
        message: str,
        *,
        code: str = ErrorCode.UNPROCESSABLE,
        status: int | None = None,
        details: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = str(code)
        self.status = status
        self.details: dict[str, object] = dict(details or {})


class StepSink(Protocol):
    """Receives every host step as it finishes (the realizer records it as an operation)."""

    async def __call__(self, step: Step) -> None: ...


@dataclass(frozen=True, kw_only=True)
class ManagedClone:
    """A repo-only project workspace's checkout under ``$CLIPYARD_HOME``."""

    path: Path
    head_branch: str | None
    head_sha: str
    cloned: bool
    """False when an existing checkout was reused."""
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class BaseRef:
    """The base a worktree starts from (reference §5.4)."""

    ref: str
    sha: str | None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class WorktreeOutcome:
    """What ``ensure_worktree`` did."""

    path: Path
    branch: str
    head_sha: str
    created: bool
    """A worktree was created (or rebuilt after it went missing): provision must run."""
    reused_existing_branch: bool = False
    refreshed_unstarted: bool = False
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class DeliveryFacts:
    """Git facts behind ``deliveryState`` (DECISIONS 2)."""

    merged_by_ancestry: bool | None
    merged_by_squash: bool | None
    commits_ahead: int | None
    head_sha: str | None


@dataclass(frozen=True, kw_only=True)
class GitInspection:
    """A worktree as close readiness sees it (reference §5.8)."""

    exists: bool
    readable: bool
    """False when git state could not be read (a blocking reason)."""
    branch: str | None
    head_sha: str | None
    dirty_count: int
    untracked_count: int
    ahead: int | None
    behind: int | None
    delivery: DeliveryFacts
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class RescueRef:
    """A rescue commit holding HEAD plus every tracked change and untracked non-ignored file."""

    ref: str
    sha: str
    file_count: int
    head: str | None = None
    """The worktree's HEAD it was written at (None: unknown, or no commit yet)."""


@dataclass(frozen=True, kw_only=True)
class ReconcileOutcome:
    """The result of a branch reconcile (reference §4.3, §5.6)."""

    from_branch: str | None
    to_branch: str | None
    from_sha: str | None
    to_sha: str | None
    ancestry_verdict: Literal["ancestor", "diverged", "unknown"]
    cleanliness: Literal["clean", "dirty", "unknown"]
    rescue: RescueRef | None = None


@dataclass(frozen=True, kw_only=True)
class CommandResult:
    """A shell command's end (provision, teardown, cleanup)."""

    exit_code: int
    step: Step


class GitPort(Protocol):
    """Every git operation the realizer performs on the host."""

    async def managed_clone(
        self,
        *,
        repo_url: str,
        repo_ref: str | None,
        target: Path,
        auth: GitInvocation | None,
        sink: StepSink,
    ) -> ManagedClone:
        """Clone into a temporary sibling then rename; reuse an existing checkout; refuse a
        non-empty non-git directory; leave nothing behind on failure."""
        ...

    async def resolve_base_ref(
        self, *, repo_root: Path, configured: str | None, auth: GitInvocation | None, sink: StepSink
    ) -> BaseRef:
        """Prefer ``origin/<branch>`` after a fetch; fetch failures become warnings."""
        ...

    async def ensure_worktree(
        self, *, repo_root: Path, path: Path, branch: str, base: BaseRef, sink: StepSink
    ) -> WorktreeOutcome:
        """Reuse a valid worktree, attach a stale branch, prune a missing registration, or
        ``git worktree add -b <branch> --no-track``."""
        ...

    async def inspect(
        self, *, repo_root: Path, path: Path, branch: str | None, base_ref: str | None
    ) -> GitInspection:
        """Status counts, ahead/behind and delivery facts of a worktree."""
        ...

    async def diff(
        self, *, workspace_id: str, path: Path, base_ref: str | None, file: str | None
    ) -> WorkspaceDiff:
        """What the worktree changed against ``base_ref``, with ``file``'s unified diff when
        asked (read-only; raises ``NotAChangedFileError`` for a file the lists do not hold)."""
        ...

    async def write_rescue_ref(
        self, *, repo_root: Path, path: Path, ref: str, message: str, sink: StepSink
    ) -> RescueRef | None:
        """Record HEAD + tracked changes + untracked non-ignored files under ``ref`` without
        touching the worktree or the branch; None when there is nothing to rescue."""
        ...

    async def drop_rescue_ref(
        self, *, repo_root: Path, ref: str, expected_sha: str, sink: StepSink
    ) -> bool:
        """Compare-and-delete a rescue ref that turned out to hold nothing worth keeping."""
        ...

    async def remove_worktree(self, *, repo_root: Path, path: Path, sink: StepSink) -> bool:
        """``git worktree remove --force``; True when the directory is gone and unregistered."""
        ...

    async def delete_branch(
        self, *, repo_root: Path, branch: str, expected_sha: str, sink: StepSink
    ) -> bool:
        """Compare-and-delete ``refs/heads/<branch>`` at ``expected_sha``; False if kept."""
        ...

    async def restore_worktree(
        self,
        *,
        repo_root: Path,
        path: Path,
        branch: str,
        base: BaseRef,
        rescue: RescueRef | None,
        sink: StepSink,
    ) -> WorktreeOutcome:
        """Rebuild a worktree on its branch (recreated from the rescue commit or base when the
        branch is gone), then restore the rescue commit's changes as uncommitted files."""
        ...

    async def push_ref(
        self,
        *,
        repo_root: Path,
        remote_url: str,
        sha: str,
        ref: str,
        auth: GitInvocation | None,
        sink: StepSink,
    ) -> None:
        """Push a commit to a move ref on the project's remote (a drain carries work so)."""
        ...

    async def fetch_ref(
        self,
        *,
        repo_root: Path,
        remote_url: str,
        ref: str,
        expected_sha: str,
        auth: GitInvocation | None,
        sink: StepSink,
    ) -> None:
        """Fetch a move ref from the remote and check it holds ``expected_sha``."""
        ...

    async def drop_pushed_refs(
        self,
        *,
        repo_root: Path,
        remote_url: str,
        refs: list[str],
        auth: GitInvocation | None,
        sink: StepSink,
    ) -> None:
        """Delete move refs from the remote once the receiving node has them."""
        ...

    async def reconcile_branch(
        self,
        *,
        repo_root: Path,
        path: Path,
        recorded_branch: str,
        mode: Literal["forward", "override", "quarantine_restore"],
        rescue_ref: str | None,
        sink: StepSink,
    ) -> ReconcileOutcome:
        """Inspect and apply a branch reconcile (reference §5.6)."""
        ...


class CommandRunner(Protocol):
    """Runs provision, teardown and cleanup commands in a sanitized environment."""

    async def run(
        self,
        *,
        phase: Phase,
        command: str,
        cwd: Path,
        env: Mapping[str, str],
        timeout: float,
        sink: StepSink,
        company_id: str = "",
        project_id: str = "",
        workspace_id: str = "",
    ) -> CommandResult: ...
