"""Where a ``local_stdio`` adapter works, and the hand-over of that place to a slot user and back
(ARCHITECTURE §6).

:func:`placement_of` reads the supervisor's own copies only (on the store's thread): the
workspace's ``cwd`` and branch, and its project workspace's checkout; a run without a workspace
works in ``runs/<runId>/scratch``. :func:`contain` (before an untrusted launch) verifies the
worktree's git layout against those facts
(:func:`~runtime_supervisor.adapters.slots.layout.trusted_layout`) and hands it to the company's
identity; :func:`give_back` (after the run, and at a restart) ends the run's resource unit and
takes the git dir and the branch's ref back (the worktree stays the identity's).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runtime_supervisor.adapters.slots.layout import GitLayout, LayoutError, trusted_layout
from runtime_supervisor.adapters.slots.ownership import (
    check_ancestors,
    hand_back,
    hand_over,
    hand_over_scratch,
)
from runtime_supervisor.domain import InvalidInputError

if TYPE_CHECKING:
    from runtime_supervisor.adapters.containment.cgroups import Unit
    from runtime_supervisor.adapters.containment.identities import Identity
    from runtime_supervisor.application import RuntimeSupervisorApplication

__all__ = ["Placement", "contain", "give_back", "placement_of", "recovered_layout"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Placement:
    """Where a run's adapter works: ``cwd``; for a workspace also its repository's checkout and
    branch (None when the copies do not know them); ``scratch``: a per-run folder of ours."""

    cwd: Path
    repo_root: Path | None = None
    branch: str | None = None
    scratch: bool = False

    def layout(self) -> GitLayout:
        """The verified git layout (blocking).

        Raises:
            LayoutError: Not a verified linked worktree of the repository on its branch.
        """
        if self.repo_root is None or self.branch is None:
            raise LayoutError(
                f"The workspace at {self.cwd} is not a git worktree of a known repository and "
                "branch: an untrusted agent runs only in an isolated worktree."
            )
        return trusted_layout(self.cwd, self.repo_root, self.branch)


def placement_of(
    app: RuntimeSupervisorApplication,
    company_id: str,
    workspace_id: str | None,
    scratch: Path,
) -> Placement:
    """The run's placement from the copies (store's thread).

    Raises:
        NotFoundError: The workspace is unknown or another company's.
        InvalidInputError: It has no directory on this node.
    """
    if workspace_id is None:
        scratch.mkdir(parents=True, exist_ok=True)
        return Placement(cwd=scratch, scratch=True)
    target = app.target(company_id, workspace_id=workspace_id)
    if not target.cwd or not Path(target.cwd).is_dir():
        raise InvalidInputError(
            f"Execution workspace {workspace_id} has no local directory on this node.",
            workspaceId=workspace_id,
        )
    root = target.project_workspace_cwd
    return Placement(
        cwd=Path(target.cwd), repo_root=Path(root) if root else None, branch=target.branch_name
    )


def _contain(placement: Placement, identity: Identity) -> GitLayout | None:
    check_ancestors(placement.cwd)
    if placement.scratch:
        hand_over_scratch(placement.cwd, identity.uid, identity.gid)
        return None
    layout = placement.layout()
    hand_over(layout, identity.uid, identity.gid)
    return layout


async def contain(placement: Placement, identity: Identity) -> GitLayout | None:
    """Verify the place and hand it to ``identity`` (its layout, None for a scratch folder).

    Raises:
        LayoutError: The worktree's git pointers disagree with the copies.
        OSError: The disk refused.
    """
    return await asyncio.to_thread(_contain, placement, identity)


def _give_back(cwd: Path, layout: GitLayout | None, identity: Identity, unit: Unit | None) -> None:
    if unit is not None:
        left = unit.kill()
        if left:
            log.error("processes of resource unit %s survived SIGKILL: %s", unit.name, left)
        else:
            unit.remove()
    hand_back(layout.worktree if layout is not None else cwd, layout, identity.uid, identity.gid)


async def give_back(
    cwd: Path, layout: GitLayout | None, identity: Identity, unit: Unit | None, run_id: str
) -> None:
    """End the run's unit and take back the git dir and branch ref (errors logged)."""
    try:
        await asyncio.to_thread(_give_back, cwd, layout, identity, unit)
    except OSError as exc:
        log.error("run %s: could not hand the worktree back: %s", run_id, exc)


def recovered_layout(placement: Placement) -> GitLayout | None:
    """The layout of a run found at a restart (None: a scratch folder, or not verifiable — then
    only the worktree is handed back)."""
    if placement.scratch:
        return None
    with contextlib.suppress(LayoutError):
        return placement.layout()
    return None
