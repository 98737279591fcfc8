"""Managed checkouts of repo-only project workspaces (reference §5.9): cloned when the project
workspace is created (a long operation), and again when the checkout has gone missing."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from contracts.errors import ErrorCode
from eventstore import current_cause
from workspace_realizer.adapters.ports import HostOperationError
from workspace_realizer.domain.errors import CheckoutFailedError, StateConflictError
from workspace_realizer.usecases.host.planning import base_checkout

if TYPE_CHECKING:
    from workspace_realizer.adapters.ports import GitInvocation
    from workspace_realizer.application import WorkspaceRealizerApplication
    from workspace_realizer.orchestration.context import Realizer
    from workspace_realizer.usecases.host.planning import BaseCheckout

__all__ = [
    "checkout_root",
    "checkout_target",
    "ensure_checkout",
    "remote_auth",
    "repo_name",
    "url_keyed_target",
]


def repo_name(repo_url: str | None) -> str:
    """The repository's name from its URL (``acme/api.git`` -> ``api``), else ``_default``."""
    tail = re.split(r"[/:]", (repo_url or "").rstrip("/"))[-1]
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", tail.removesuffix(".git")).strip(".-")
    return name or "_default"


def checkout_target(home: Path, base: BaseCheckout) -> Path:
    """``$CLIPYARD_HOME/checkouts/<projectId>/<projectWorkspaceId>/<repo name>``: distinct for
    every project workspace, so two repositories of the same name never collide."""
    return home / "checkouts" / base.project_id / base.id / repo_name(base.repo_url)


def url_keyed_target(target: Path, repo_url: str) -> Path:
    """``<target>-<8 hex of the URL's hash>``: where a repository whose plain directory holds a
    clone of another origin is cloned instead."""
    key = repo_url.strip().rstrip("/").removesuffix(".git").lower()
    return target.with_name(f"{target.name}-{hashlib.sha256(key.encode()).hexdigest()[:8]}")


async def remote_auth(
    ctx: Realizer, base: BaseCheckout, operation_id: str | None
) -> GitInvocation | None:
    """How to authenticate git for the project workspace's repository in this run (or this
    operation when no run is involved): asked of the credential port; None without a URL."""
    if not base.repo_url:
        return None
    cause = current_cause()
    return await ctx.ports.credentials.invocation_for(
        remote_url=base.repo_url,
        company_id=base.company_id,
        run_id=cause.run_id if cause else None,
        operation_id=operation_id,
    )


async def checkout_root(ctx: Realizer, base: BaseCheckout, operation_id: str | None) -> Path:
    """The directory worktrees branch from: the local checkout, or the managed one (cloned now
    if it is missing)."""
    if base.cwd is not None:
        return Path(base.cwd)
    return await ensure_checkout(ctx, base.id, operation_id)


def _base(
    app: WorkspaceRealizerApplication, project_workspace_id: str, node: str | None = None
) -> BaseCheckout:
    pw = app.project_workspaces[project_workspace_id]
    if node is not None and pw.node_id is not None and pw.node_id != node:
        # A drain moved it while this waited for its lock: its checkout is not this host's.
        raise StateConflictError(
            f"Project workspace {project_workspace_id} moved to node {pw.node_id}; retry.",
            projectWorkspaceId=project_workspace_id,
            nodeId=pw.node_id,
        )
    return base_checkout(pw)


@dataclass(frozen=True)
class InProcessCheckouts:
    """The :class:`~workspace_realizer.usecases.ports.ManagedCheckouts` of this process's host
    part (the company-wide endpoints ask it for managed clones)."""

    realizer: Realizer

    async def ensure(self, project_workspace_id: str, operation_id: str | None) -> None:
        """:func:`ensure_checkout`."""
        await ensure_checkout(self.realizer, project_workspace_id, operation_id)


async def ensure_checkout(
    ctx: Realizer, project_workspace_id: str, operation_id: str | None
) -> Path:
    """Clone the project workspace's repository unless its managed checkout is there already.

    Raises:
        HostOperationError: The clone failed (recorded as ``failed`` on the project workspace).
    """
    async with ctx.locks.hold(f"checkout:{project_workspace_id}"):
        base = await ctx.store(_base, ctx.app, project_workspace_id, ctx.node_id)
        ready = base.checkout_state == "ready" and base.checkout_path is not None
        if ready and await asyncio.to_thread(
            os.path.isdir, os.path.join(base.checkout_path or "", ".git")
        ):
            return Path(base.checkout_path or "")
        target = checkout_target(ctx.home, base)
        await ctx.store(ctx.app.start_checkout, base.id, str(target), operation_id)
        sink = ctx.recorder(
            company_id=base.company_id, project_workspace_id=base.id, operation_id=operation_id
        )
        try:
            auth = await remote_auth(ctx, base, operation_id)
            clone = await ctx.ports.git.managed_clone(
                repo_url=base.repo_url or "",
                repo_ref=base.repo_ref,
                target=target,
                auth=auth,
                sink=sink,
            )
            if not clone.cloned and clone.warnings:
                # The directory holds a clone of another origin (the repoUrl changed): clone the
                # new URL beside it, in a directory keyed by the URL. The old clone stays for the
                # worktrees still registered in it.
                target = url_keyed_target(target, base.repo_url or "")
                await ctx.store(ctx.app.start_checkout, base.id, str(target), operation_id)
                clone = await ctx.ports.git.managed_clone(
                    repo_url=base.repo_url or "",
                    repo_ref=base.repo_ref,
                    target=target,
                    auth=auth,
                    sink=sink,
                )
                if clone.warnings:
                    raise HostOperationError(
                        " ".join(clone.warnings),
                        code=ErrorCode.STATE_CONFLICT,
                        details={"reason": "managed_checkout_other_origin", "path": str(target)},
                    )
        except HostOperationError as exc:
            await ctx.store(ctx.app.fail_checkout, base.id, str(exc))
            raise CheckoutFailedError(str(exc), projectWorkspaceId=base.id, **exc.details) from exc
        except Exception as exc:
            await ctx.store(ctx.app.fail_checkout, base.id, f"the clone failed: {exc}")
            raise
        await ctx.store(
            ctx.app.finish_checkout, base.id, str(clone.path), clone.head_sha, clone.head_branch
        )
        return clone.path
