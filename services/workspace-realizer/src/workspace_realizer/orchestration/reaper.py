"""The terminal reaper (reference §5.7, case 62; DECISIONS 3, 4): archive workspaces whose source
issue has been terminal for the cooldown (``CLIPYARD_REAPER_COOLDOWN``, default 7 days), whose work
is delivered and whose tree is clean, and retry ``cleanup_failed`` ones. It never runs cleanup
commands and skips a workspace that a run holds, that was reopened minutes ago, or whose source
issue still has open children."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from eventstore import acting, system_cause
from servicekit.access import Access, ActorKind
from workspace_realizer.domain.errors import CloseBlockedError, WorkspaceRealizerError
from workspace_realizer.domain.host.delivery import DELIVERED
from workspace_realizer.orchestration.archive import archive
from workspace_realizer.orchestration.facts import assess, gather

if TYPE_CHECKING:
    from workspace_realizer.application import WorkspaceRealizerApplication
    from workspace_realizer.domain import Issue
    from workspace_realizer.domain.host import ExecutionWorkspace
    from workspace_realizer.orchestration.context import Realizer

__all__ = ["Candidate", "ReaperWork", "candidates", "reap_once", "run_reaper"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Candidate:
    """A workspace whose source issue is terminal, and why it is skipped (None: try it)."""

    workspace_id: str
    company_id: str
    skip: str | None


def candidates(
    app: WorkspaceRealizerApplication, now: datetime, cooldown: timedelta, node: str = "local"
) -> list[Candidate]:
    """The workspaces of ``node`` the reaper looks at this round, from the stored facts (store
    thread): a node's reaper never archives another node's workspaces."""
    found = []
    for ws in app.workspaces.values():
        if ws.closing or ws.status == "archived" or ws.node_id != node:
            continue
        source = app.issues.get(ws.source_issue_id)
        if source is not None and not source.deleted and not source.terminal:
            continue
        found.append(Candidate(str(ws.id), ws.company_id, _skip(app, ws, source, now, cooldown)))
    return found


def _skip(
    app: WorkspaceRealizerApplication,
    ws: ExecutionWorkspace,
    source: Issue | None,
    now: datetime,
    cooldown: timedelta,
) -> str | None:
    eligible_at = ws.cleanup_eligible_at
    if eligible_at is None and source is not None:
        eligible_at = source.status_since + cooldown
    if eligible_at is not None and now < eligible_at:
        return "skippedCooldown"
    if any(
        child.parent_id == ws.source_issue_id and not child.deleted and not child.terminal
        for child in app.issues.values()
    ):
        return "skippedNonTerminalTree"
    if ws.reopen_fenced(now):
        return "skippedReopened"
    if app.run_holders.get(str(ws.id)):
        return "skippedActiveRun"
    return None


async def reap_once(ctx: Realizer) -> dict[str, list[str]]:
    """One round; returns the workspace ids by outcome (``archived``, ``cleanupFailed``,
    ``skipped*``, ``failed``)."""
    now = await ctx.store(ctx.app.stamp)
    report: dict[str, list[str]] = defaultdict(list)
    for candidate in await ctx.store(candidates, ctx.app, now, ctx.reaper_cooldown, ctx.node_id):
        if candidate.skip is not None:
            report[candidate.skip].append(candidate.workspace_id)
            continue
        outcome = await _reap(ctx, candidate)
        report[outcome].append(candidate.workspace_id)
    return dict(report)


async def _reap(ctx: Realizer, candidate: Candidate) -> str:
    access = Access(
        kind=ActorKind.SYSTEM, company_id=candidate.company_id, actor_id=ctx.service_name
    )
    with acting(system_cause(ctx.service_name, "terminal reaper: the source issue is terminal")):
        try:
            facts = await ctx.store(gather, ctx.app, access, candidate.workspace_id)
            if facts.workspace.is_worktree:
                _, delivery, _ = await assess(ctx, facts)
                inspection = delivery.inspection
                if (
                    inspection is not None
                    and inspection.exists
                    and (
                        inspection.dirty_count
                        or inspection.untracked_count
                        or delivery.state not in DELIVERED
                    )
                ):
                    return "skippedUndelivered"
            await archive(ctx, access, candidate.workspace_id, trigger="issue_terminal")
        except CloseBlockedError:
            return "skippedBlocked"
        except WorkspaceRealizerError as error:
            log.info(
                "reaper skipped a workspace",
                extra={"workspace_id": candidate.workspace_id, "reason": str(error)},
            )
            return "skippedConflict"
        except Exception:
            log.exception(
                "reaper failed on a workspace", extra={"workspace_id": candidate.workspace_id}
            )
            return "failed"
    status = await ctx.store(lambda: ctx.app.workspaces[candidate.workspace_id].status)
    return "archived" if status == "archived" else "cleanupFailed"


async def run_reaper(ctx: Realizer, *, interval: float, stop: asyncio.Event) -> None:
    """Reap every ``interval`` seconds until ``stop`` is set."""
    while not stop.is_set():
        try:
            report = await reap_once(ctx)
            if report:
                log.info("reaper round", extra={"report": report})
        except Exception:
            log.exception("reaper round failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval)


class ReaperWork:
    """The reaper as the lease holder's work (servicekit.leadership): its round in hand ends
    first when it stops (up to the stop's timeout), then it is cancelled."""

    def __init__(self, ctx: Realizer, *, interval: float) -> None:
        self._ctx = ctx
        self._interval = interval
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start reaping every ``interval`` seconds."""
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(
            run_reaper(self._ctx, interval=self._interval, stop=self._stop), name="reaper"
        )

    async def stop(self, timeout: float) -> None:
        """Let the round in hand end (``timeout`` seconds at most), then cancel it."""
        task, self._task = self._task, None
        if task is None:
            return
        self._stop.set()
        _, pending = await asyncio.wait({task}, timeout=max(timeout, 0.1))
        for waiting in pending:
            waiting.cancel()
