"""The parts of a drain pass (:mod:`.drain`): its report as it grows, the nodes it may move to,
and where a moved worktree and checkout were."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from contracts.drains import MovedWorkspace, UnmovedWorkspace, WaitingWorkspace

if TYPE_CHECKING:
    from contracts.drains import UnmovedReason
    from contracts.nodes import NodeView
    from workspace_realizer.usecases.host.moves import DrainGroup

__all__ = ["PassReport", "move_targets", "remove_checkout", "under_home"]


@dataclass
class PassReport:
    """What one drain pass did, gathered as it goes."""

    moved: list[MovedWorkspace] = field(default_factory=list)
    project_workspaces: list[str] = field(default_factory=list)
    unmoved: list[UnmovedWorkspace] = field(default_factory=list)
    waiting: list[WaitingWorkspace] = field(default_factory=list)

    def refuse(self, group: DrainGroup, reason: UnmovedReason, message: str) -> None:
        """Every workspace of ``group`` (or the project workspace alone) stays, for ``reason``."""
        pw = group.project_workspace_id
        targets: list[str | None] = [ws.id for ws in group.workspaces] or [None]
        self.unmoved += [
            UnmovedWorkspace(
                workspace_id=w, project_workspace_id=pw, reason=reason, message=message
            )
            for w in targets
        ]


def remove_checkout(home: Path, root: Path) -> None:
    """Remove a managed checkout that moved away (never anything outside ``checkouts/``)."""
    checkouts, resolved = (home / "checkouts").resolve(), root.resolve()
    if resolved != checkouts and resolved.is_relative_to(checkouts):
        shutil.rmtree(resolved, ignore_errors=True)


def move_targets(nodes: list[NodeView], node: str) -> list[NodeView]:
    """The nodes a drain may move to: ready, with their realizer host part answering."""
    return [n for n in nodes if n.id != node and n.state == "ready" and "realizer" in n.parts]


def under_home(home: Path, path: str) -> str | None:
    """``path`` relative to ``home`` (None: outside it, the same path on every host)."""
    try:
        return str(Path(path).relative_to(home))
    except ValueError:
        return None
