"""Use cases of draining a node (docs/scale-out.md, "Draining a node"): what is placed on the
node, grouped by project workspace (they move together: a project workspace's worktrees live in
its checkout), and the records of a move."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from eventstore import acting, current_cause
from workspace_realizer.domain.host.lifecycle import OPEN_STATUSES
from workspace_realizer.usecases.host.queries import WorkspaceQueries

if TYPE_CHECKING:
    from workspace_realizer.domain.host import ExecutionWorkspace
    from workspace_realizer.domain.host.records import RescueRefRecord

__all__ = ["DrainGroup", "MoveUseCases", "MovingWorkspace"]


@dataclass(frozen=True)
class MovingWorkspace:
    """An open execution workspace on the drained node, as the move needs it."""

    id: str
    company_id: str
    cwd: str | None
    branch_name: str | None
    base_ref: str | None
    worktree: bool
    """A git worktree Clipyard made (else it works in the project workspace's own checkout)."""
    generation: int
    run_ids: tuple[str, ...]
    closing: bool


@dataclass(frozen=True)
class ClosedWorkspace:
    """An archived workspace of a moving project workspace, with the rescue commits a reopen
    would restore (``(ref, sha)``, kept in the project workspace's checkout)."""

    id: str
    cwd: str | None
    rescues: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class DrainGroup:
    """A project workspace on the drained node with its open execution workspaces there (or,
    with ``project_workspace_id`` None, the node's workspaces that have none)."""

    project_workspace_id: str | None
    company_id: str
    repo_url: str | None
    local_cwd: str | None
    checkout_path: str | None
    workspaces: tuple[MovingWorkspace, ...]
    closed: tuple[ClosedWorkspace, ...] = ()


def _moving(ws: ExecutionWorkspace) -> MovingWorkspace:
    return MovingWorkspace(
        id=str(ws.id),
        company_id=ws.company_id,
        cwd=ws.cwd,
        branch_name=ws.branch_name,
        base_ref=ws.base_ref,
        worktree=ws.provider_type == "git_worktree",
        generation=ws.lifecycle_generation,
        run_ids=tuple(ws.run_ids),
        closing=ws.closing,
    )


class MoveUseCases(WorkspaceQueries):
    """Read what a drain moves; record the moves."""

    def _open_on(self, node: str) -> list[ExecutionWorkspace]:
        return [
            ws
            for ws in self.workspaces.values()
            if ws.node_id == node and ws.status in OPEN_STATUSES
        ]

    def drain_groups(self, node: str) -> list[DrainGroup]:
        """The project workspaces placed on ``node`` with their open execution workspaces
        there, by id; the node's workspaces without a project workspace last."""
        by_pw: dict[str | None, list[MovingWorkspace]] = {}
        for ws in self._open_on(node):
            pw = self.project_workspaces.get(ws.project_workspace_id or "")
            key = ws.project_workspace_id if pw is not None and not pw.deleted else None
            by_pw.setdefault(key, []).append(_moving(ws))
        closed: dict[str, list[ClosedWorkspace]] = {}
        for ws in self.workspaces.values():
            if ws.node_id == node and ws.status not in OPEN_STATUSES and ws.project_workspace_id:
                rescues = tuple((r["ref"], r["sha"]) for r in ws.rescue_refs)
                closed.setdefault(ws.project_workspace_id, []).append(
                    ClosedWorkspace(id=str(ws.id), cwd=ws.cwd, rescues=rescues)
                )
        groups = []
        for pw_id, pw in sorted(self.project_workspaces.items()):
            if pw.deleted or (pw.node_id != node and pw_id not in by_pw):
                continue
            groups.append(
                DrainGroup(
                    project_workspace_id=pw_id,
                    company_id=pw.company_id,
                    repo_url=pw.repo_url,
                    local_cwd=pw.cwd,
                    checkout_path=pw.checkout_path if pw.checkout_state == "ready" else None,
                    workspaces=tuple(sorted(by_pw.get(pw_id, []), key=lambda w: w.id)),
                    closed=tuple(sorted(closed.get(pw_id, []), key=lambda w: w.id)),
                )
            )
        if by_pw.get(None):
            orphans = tuple(sorted(by_pw[None], key=lambda w: w.id))
            groups.append(DrainGroup(None, orphans[0].company_id, None, None, None, orphans))
        return groups

    def drain_group(self, node: str, project_workspace_id: str) -> DrainGroup | None:
        """The group of ``project_workspace_id`` on ``node`` as it is now (None: gone)."""
        return next(
            (g for g in self.drain_groups(node) if g.project_workspace_id == project_workspace_id),
            None,
        )

    def placed_on(self, node: str) -> int:
        """Open execution workspaces and live project workspaces on ``node``."""
        pws = sum(
            1 for pw in self.project_workspaces.values() if pw.node_id == node and not pw.deleted
        )
        return len(self._open_on(node)) + pws

    def move_project_workspace(self, project_workspace_id: str, to_node: str, reason: str) -> None:
        """Record that the project workspace now lives on ``to_node`` (cloned there anew)."""
        pw = self.load(project_workspace_id)
        cause = current_cause()
        with acting(cause.because(reason)) if cause else contextlib.nullcontext():
            pw.move(to_node)
        self.save(pw)

    def record_move(
        self,
        workspace_id: str,
        to_node: str,
        cwd: str | None,
        rescue: RescueRefRecord | None,
        operation_id: str | None,
    ) -> ExecutionWorkspace:
        """Record that the workspace was rebuilt on ``to_node`` at ``cwd``."""
        workspace: ExecutionWorkspace = self.load(workspace_id)
        workspace.move(to_node, cwd, rescue, operation_id)
        self.save(workspace)
        return self.workspaces[workspace_id]
