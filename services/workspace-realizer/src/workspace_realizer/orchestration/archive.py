"""Archive: the saga of ARCHITECTURE §4.4, run by the realizer.

close readiness (``close_blocked`` when blocked) -> ``ArchiveStarted`` (generation + 1) -> ask the
supervisor to stop the workspace's runtime services -> cleanup and teardown commands (only inside the
workspace's own worktree, see ``close_commands``) -> rescue ref written right before the removal,
kept when it holds anything undelivered -> ``git worktree remove`` -> delete the branch if allowed
(DECISIONS 3: only ours, only after the worktree is gone, only when delivered or fully reachable,
compare-and-delete) -> verify on disk -> ``Archived`` or ``CleanupFailed`` (at the same
generation: a late step never overwrites a newer lifecycle). An interrupted saga (cancellation at
shutdown) records ``CleanupFailed`` ("interrupted"); one cut short by a crash is failed the same way
when the service starts again (``recovery``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from workspace_realizer.adapters.safety import removal_refusal
from workspace_realizer.domain.errors import CloseBlockedError
from workspace_realizer.domain.host.delivery import DELIVERED
from workspace_realizer.domain.host.readiness import rescue_ref_name
from workspace_realizer.domain.host.records import ArchiveOutcome
from workspace_realizer.orchestration.close_commands import run_close_commands
from workspace_realizer.orchestration.facts import assess, gather
from workspace_realizer.usecases.host.views import readiness_view

if TYPE_CHECKING:
    from servicekit.access import Access
    from workspace_realizer.adapters.ports import RescueRef
    from workspace_realizer.domain.host.readiness import Readiness
    from workspace_realizer.domain.host.records import RescueRefRecord
    from workspace_realizer.orchestration.context import Realizer
    from workspace_realizer.orchestration.facts import CloseFacts, Delivery

__all__ = ["INTERRUPTED", "ArchiveFailure", "archive"]

INTERRUPTED = "interrupted"
"""The ``cleanupReason`` of an archive that did not run to its end (shutdown, crash)."""

log = logging.getLogger(__name__)


class ArchiveFailure(Exception):
    """A cleanup step that leaves the workspace ``cleanup_failed`` (nothing beyond it ran)."""


@dataclass
class _Progress:
    warnings: list[str] = field(default_factory=list)
    rescue_ref: RescueRefRecord | None = None
    stopped: int = 0
    removed: bool = False
    branch_deleted: bool = False
    kept_reason: str | None = None


async def archive(
    ctx: Realizer,
    access: Access,
    workspace_id: str,
    *,
    trigger: str = "manual",
    expected_generation: int | None = None,
    operation_id: str | None = None,
) -> str:
    """Archive a workspace (idempotent once archived); return its id. The reaper passes
    ``trigger="issue_terminal"``, which skips the cleanup and teardown commands.

    Raises:
        CloseBlockedError: Close readiness is blocked (nothing was changed).
        ReopenPendingError, StateConflictError, FenceError: The lifecycle does not allow it now.
    """
    async with ctx.locks.hold(f"workspace:{workspace_id}"):
        facts = await ctx.store(gather, ctx.app, access, workspace_id)
        if facts.workspace.status == "archived" and not facts.workspace.closing:
            return workspace_id
        readiness, delivery, _ = await assess(ctx, facts)
        if readiness.state == "blocked":
            raise CloseBlockedError(
                readiness.blocking_reasons[0],
                blockingReasons=readiness.blocking_reasons,
                closeReadiness=msgspec.to_builtins(readiness_view(facts, readiness, delivery)),
            )
        generation = await ctx.store(
            ctx.app.start_archive,
            workspace_id,
            trigger=trigger,
            expected_generation=expected_generation,
        )
        progress = _Progress()
        try:
            await _cleanup(
                ctx, facts, readiness, delivery, generation, progress, trigger, operation_id
            )
        except ArchiveFailure as failure:
            await _failed(ctx, workspace_id, generation, str(failure), progress, operation_id)
            return workspace_id
        except Exception as error:
            message = f"Archive failed unexpectedly: {error}"
            await _failed(ctx, workspace_id, generation, message, progress, operation_id)
            raise
        except BaseException:
            # Cancelled (shutdown) or stopped: never leave the workspace closing for good.
            with contextlib.suppress(Exception):
                await _failed(ctx, workspace_id, generation, INTERRUPTED, progress, operation_id)
            log.warning("archive interrupted", extra={"workspace_id": workspace_id})
            raise
        outcome = _outcome(facts, progress, trigger, operation_id)
        await ctx.store(ctx.app.finish_archive, workspace_id, generation, outcome)
        return workspace_id


async def _failed(
    ctx: Realizer,
    workspace_id: str,
    generation: int,
    error: str,
    progress: _Progress,
    operation_id: str | None,
) -> None:
    await ctx.store(
        ctx.app.fail_cleanup,
        workspace_id,
        generation,
        error=error,
        rescue_ref=progress.rescue_ref,
        operation_id=operation_id,
    )


async def _cleanup(
    ctx: Realizer,
    facts: CloseFacts,
    readiness: Readiness,
    delivery: Delivery,
    generation: int,
    progress: _Progress,
    trigger: str,
    operation_id: str | None,
) -> None:
    ws = facts.workspace
    sink = ctx.recorder(
        company_id=ws.company_id,
        workspace_id=ws.id,
        project_workspace_id=ws.project_workspace_id,
        issue_id=ws.source_issue_id,
        operation_id=operation_id,
    )
    try:
        progress.stopped = await ctx.stop_services(ws.company_id, ws.id, generation)
    except Exception as error:
        raise ArchiveFailure(f"Could not stop the workspace's runtime services: {error}") from error
    if trigger == "manual":
        progress.warnings += await run_close_commands(ctx, facts, sink)
    if not ws.is_worktree or not ws.path or facts.repo_root is None:
        return
    root, path = facts.repo_root, Path(ws.path)
    refusal = removal_refusal(path, facts.protected)
    if refusal is not None:
        raise ArchiveFailure(refusal)
    if await asyncio.to_thread(os.path.isdir, path):
        # Decided now, not from the inspection made before the stop and the commands: a file
        # written meanwhile must not go with ``git worktree remove --force``.
        ref = rescue_ref_name(ws.id, generation)
        try:
            rescued = await ctx.ports.git.write_rescue_ref(
                repo_root=root,
                path=path,
                ref=ref,
                message=_rescue_message(ws.id, generation),
                sink=sink,
            )
        except Exception as error:
            raise ArchiveFailure(
                f"Could not write the rescue ref {ref}; nothing was removed: {error}"
            ) from error
        if rescued is not None and not _holds_undelivered(rescued, delivery):
            # Nothing undelivered after all: leave no ref behind that no one will ever list.
            await ctx.ports.git.drop_rescue_ref(
                repo_root=root, ref=rescued.ref, expected_sha=rescued.sha, sink=sink
            )
        elif rescued is not None:
            progress.rescue_ref = {
                "ref": rescued.ref,
                "sha": rescued.sha,
                "fileCount": rescued.file_count,
                "generation": generation,
                "createdAt": (await ctx.store(ctx.app.stamp)).isoformat(),
            }
    try:
        removed = await ctx.ports.git.remove_worktree(repo_root=root, path=path, sink=sink)
    except Exception as error:
        raise ArchiveFailure(f"Could not remove the worktree {path}: {error}") from error
    still_there = await asyncio.to_thread(os.path.lexists, path)
    if not removed or still_there:
        raise ArchiveFailure(f"The worktree {path} is still on disk or still registered with git.")
    progress.removed = True
    await _delete_branch(ctx, facts, readiness, delivery, sink, progress)


async def _delete_branch(
    ctx: Realizer,
    facts: CloseFacts,
    readiness: Readiness,
    delivery: Delivery,
    sink: Any,
    progress: _Progress,
) -> None:
    ws, inspection = facts.workspace, delivery.inspection
    head = inspection.head_sha if inspection is not None else None
    if not ws.branch_name or not readiness.delete_branch or not head or facts.repo_root is None:
        progress.kept_reason = readiness.branch_kept_reason or (
            "the branch head could not be checked" if ws.branch_created and ws.branch_name else None
        )
        return
    deleted = await ctx.ports.git.delete_branch(
        repo_root=facts.repo_root, branch=ws.branch_name, expected_sha=head, sink=sink
    )
    progress.branch_deleted = deleted
    if not deleted:
        progress.kept_reason = "the branch moved since it was checked, or git refused"
        progress.warnings.append(
            f"Skipped deleting branch {ws.branch_name}: {progress.kept_reason}."
        )


def _holds_undelivered(rescued: RescueRef, delivery: Delivery) -> bool:
    """Whether a rescue ref keeps anything the removal would lose: files, or commits not delivered
    (unknown counts as not delivered). Commits made since the inspection stay on the branch: its
    deletion compares against the inspected head."""
    inspection = delivery.inspection
    if rescued.file_count or inspection is None or not inspection.readable:
        return True
    return not (delivery.state in DELIVERED or delivery.commits_ahead == 0)


def _outcome(
    facts: CloseFacts, progress: _Progress, trigger: str, operation_id: str | None
) -> ArchiveOutcome:
    ws = facts.workspace
    detached = [i.id for i in facts.linked] if ws.mode == "shared_workspace" else []
    reasons = (["issue_terminal"] if trigger == "issue_terminal" else []) + progress.warnings
    return ArchiveOutcome(
        trigger=trigger,
        cleanup_reason=" | ".join(reasons) or None,
        rescue_ref=progress.rescue_ref,
        branch_deleted=progress.branch_deleted,
        branch_kept_reason=progress.kept_reason,
        worktree_removed=progress.removed,
        runtime_services_stopped=progress.stopped,
        detached_issue_ids=detached,
        cleanup_warnings=list(progress.warnings),
        operation_id=operation_id,
    )


def _rescue_message(workspace_id: str, generation: int) -> str:
    return (
        f"Clipyard rescue of workspace {workspace_id} (generation {generation})\n\n"
        "HEAD plus every tracked change and untracked file, kept before archiving."
    )
