"""The :class:`~workspace_realizer.adapters.ports.GitPort` of the host: each operation takes the
repository's lock, then runs the module that does the work (``clone``, ``baseref``, ``worktrees``,
``inspection``, ``rescue``, ``restore``, ``branches``, ``reconcile``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from contracts.workspace_diff import WorkspaceDiff
from workspace_realizer.adapters import (
    baseref,
    branches,
    carry,
    clone,
    fs,
    inspection,
    reconcile,
    rescue,
    restore,
    worktree_removal,
    worktrees,
)
from workspace_realizer.adapters.gitcli import GitRunner
from workspace_realizer.adapters.ports import (
    BaseRef,
    GitInspection,
    GitInvocation,
    ManagedClone,
    ReconcileOutcome,
    RescueRef,
    StepSink,
    WorktreeOutcome,
)
from workspace_realizer.adapters.worktree_diff import worktree_diff
from workspace_realizer.adapters.worktree_pool import WorktreePool

__all__ = ["HostGit"]


class HostGit:
    """Every git operation the realizer performs on the host, serialized per repository.

    Args:
        runner: The git runner (default: one whose empty hooks directory lives under ``home``,
            or in a temporary directory).
        home: ``$CLIPYARD_HOME`` (for the empty hooks directory).
        base_env: The environment git starts from, before sanitizing.
        pool_size: Pre-warmed worktrees per project workspace (0: no pool).
        pool_refresh: Seconds between the pool's checks that a base moved.
        pool_min_free_bytes: Free space under which the pool makes no worktree.
    """

    def __init__(
        self,
        runner: GitRunner | None = None,
        *,
        home: Path | None = None,
        base_env: Mapping[str, str] | None = None,
        pool_size: int = 0,
        pool_refresh: float = 60.0,
        pool_min_free_bytes: int = 0,
    ) -> None:
        self.git = runner or GitRunner(home=home, base_env=base_env)
        self.pool = (
            WorktreePool(
                self.git,
                home=home,
                size=pool_size,
                refresh=pool_refresh,
                min_free_bytes=pool_min_free_bytes,
            )
            if pool_size > 0 and home is not None
            else None
        )

    async def managed_clone(
        self,
        *,
        repo_url: str,
        repo_ref: str | None,
        target: Path,
        auth: GitInvocation | None,
        sink: StepSink,
    ) -> ManagedClone:
        """See :meth:`GitPort.managed_clone` (serialized on ``<target>/.git``)."""
        key = os.path.join(fs.realpath(target), ".git")
        async with self.git.lock(key):
            return await clone.managed_clone(
                self.git, repo_url=repo_url, repo_ref=repo_ref, target=target, auth=auth, sink=sink
            )

    async def resolve_base_ref(
        self, *, repo_root: Path, configured: str | None, auth: GitInvocation | None, sink: StepSink
    ) -> BaseRef:
        """See :meth:`GitPort.resolve_base_ref`."""
        async with await self.git.repo_lock(repo_root):
            return await baseref.resolve_base_ref(
                self.git, repo_root=repo_root, configured=configured, auth=auth, sink=sink
            )

    async def ensure_worktree(
        self, *, repo_root: Path, path: Path, branch: str, base: BaseRef, sink: StepSink
    ) -> WorktreeOutcome:
        """See :meth:`GitPort.ensure_worktree`."""
        async with await self.git.repo_lock(repo_root):
            return await worktrees.ensure_worktree(
                self.git,
                repo_root=repo_root,
                path=path,
                branch=branch,
                base=base,
                sink=sink,
                pool=self.pool,
            )

    async def inspect(
        self, *, repo_root: Path, path: Path, branch: str | None, base_ref: str | None
    ) -> GitInspection:
        """See :meth:`GitPort.inspect`.

        Read-only, so it takes no repository lock: a detail or close-readiness read never waits
        behind a long fetch or clone (``GIT_OPTIONAL_LOCKS=0`` keeps ``git status`` from writing
        the index). Decisions that destroy anything re-inspect under the lock
        (``write_rescue_ref``, ``delete_branch``).
        """
        return await inspection.inspect_worktree(
            self.git, repo_root=repo_root, path=path, branch=branch, base_ref=base_ref
        )

    async def diff(
        self, *, workspace_id: str, path: Path, base_ref: str | None, file: str | None
    ) -> WorkspaceDiff:
        """See :meth:`GitPort.diff` (read-only: no repository lock, as :meth:`inspect`)."""
        return await worktree_diff(
            self.git, workspace_id=workspace_id, path=path, base_ref=base_ref, file=file
        )

    async def write_rescue_ref(
        self, *, repo_root: Path, path: Path, ref: str, message: str, sink: StepSink
    ) -> RescueRef | None:
        """See :meth:`GitPort.write_rescue_ref`."""
        async with await self.git.repo_lock(repo_root):
            return await rescue.write_rescue_ref(
                self.git, repo_root=repo_root, path=path, ref=ref, message=message, sink=sink
            )

    async def drop_rescue_ref(
        self, *, repo_root: Path, ref: str, expected_sha: str, sink: StepSink
    ) -> bool:
        """See :meth:`GitPort.drop_rescue_ref`."""
        async with await self.git.repo_lock(repo_root):
            return await rescue.drop_rescue_ref(
                self.git, repo_root=repo_root, ref=ref, expected_sha=expected_sha, sink=sink
            )

    async def remove_worktree(self, *, repo_root: Path, path: Path, sink: StepSink) -> bool:
        """See :meth:`GitPort.remove_worktree`."""
        async with await self.git.repo_lock(repo_root):
            return await worktree_removal.remove_worktree(
                self.git, repo_root=repo_root, path=path, sink=sink
            )

    async def delete_branch(
        self, *, repo_root: Path, branch: str, expected_sha: str, sink: StepSink
    ) -> bool:
        """See :meth:`GitPort.delete_branch`."""
        async with await self.git.repo_lock(repo_root):
            return await branches.delete_branch(
                self.git, repo_root=repo_root, branch=branch, expected_sha=expected_sha, sink=sink
            )

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
        """See :meth:`GitPort.restore_worktree`."""
        async with await self.git.repo_lock(repo_root):
            return await restore.restore_worktree(
                self.git,
                repo_root=repo_root,
                path=path,
                branch=branch,
                base=base,
                rescue=rescue,
                sink=sink,
            )

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
        """See :meth:`GitPort.push_ref`."""
        async with await self.git.repo_lock(repo_root):
            await carry.push_ref(
                self.git,
                repo_root=repo_root,
                remote_url=remote_url,
                sha=sha,
                ref=ref,
                auth=auth,
                sink=sink,
            )

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
        """See :meth:`GitPort.fetch_ref`."""
        async with await self.git.repo_lock(repo_root):
            await carry.fetch_ref(
                self.git,
                repo_root=repo_root,
                remote_url=remote_url,
                ref=ref,
                expected_sha=expected_sha,
                auth=auth,
                sink=sink,
            )

    async def drop_pushed_refs(
        self,
        *,
        repo_root: Path,
        remote_url: str,
        refs: list[str],
        auth: GitInvocation | None,
        sink: StepSink,
    ) -> None:
        """See :meth:`GitPort.drop_pushed_refs`."""
        async with await self.git.repo_lock(repo_root):
            await carry.drop_pushed_refs(
                self.git,
                repo_root=repo_root,
                remote_url=remote_url,
                refs=refs,
                auth=auth,
                sink=sink,
            )

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
        """See :meth:`GitPort.reconcile_branch`."""
        async with await self.git.repo_lock(repo_root):
            return await reconcile.reconcile_branch(
                self.git,
                repo_root=repo_root,
                path=path,
                recorded_branch=recorded_branch,
                mode=mode,
                rescue_ref=rescue_ref,
                sink=sink,
            )
