"""Draining a worker node (docs/scale-out.md, "Draining a node"): no new project workspace is
placed on it, and its idle repo-only workspaces move to another ready node.

``ws.cmd.workspace.drain_node.<node>`` goes to the drained node's realizer host part (the admin
key: ``POST /api/nodes/{id}/drain``, ``clipyard nodes drain``). It asks the runtime-supervisors to
record the node as ``draining`` (``ws.cmd.node.mark_draining``), moves what it can now and answers
a :class:`DrainReport`; workspaces a run holds are moved by the same host part once their runs
end. A move saves each workspace's undelivered work in a rescue ref, pushes it to the project's
remote, clones the project workspace on the other node (``ws.cmd.workspace.move_in.<node>``),
rebuilds each worktree there at the same commit with its uncommitted and untracked files, and
starts the runtime services that were running.
"""

from __future__ import annotations

from typing import Final, Literal

import msgspec

from contracts.base import Command, Struct
from contracts.http import StrictBody
from contracts.subjects import command

__all__ = [
    "NODE_MARK_DRAINING",
    "NODE_UNDRAIN",
    "CarriedRef",
    "DrainNode",
    "DrainNodeBody",
    "DrainReport",
    "MarkNodeDraining",
    "MoveIn",
    "MoveInResult",
    "MoveInWorkspaces",
    "MovedWorkspace",
    "UndrainNode",
    "UnmovedReason",
    "UnmovedWorkspace",
    "WaitingWorkspace",
    "drain_node",
    "move_in",
]

NODE_MARK_DRAINING: Final = command("node", "mark_draining")
"""``ws.cmd.node.mark_draining``: any runtime-supervisor records the node as draining."""
NODE_UNDRAIN: Final = command("node", "undrain")
"""``ws.cmd.node.undrain``: any runtime-supervisor records the node as ready for placement
again (``POST /api/nodes/{node}/undrain``, ``clipyard nodes undrain``)."""


def drain_node(node: str) -> str:
    """``ws.cmd.workspace.drain_node.<node>``: the drained node's realizer host part."""
    return command("workspace", "drain_node", node)


def move_in(node: str) -> str:
    """``ws.cmd.workspace.move_in.<node>``: the realizer host part a project workspace moves to."""
    return command("workspace", "move_in", node)


class DrainNodeBody(StrictBody, frozen=True, kw_only=True):
    """``POST /api/nodes/{nodeId}/drain`` (optional body)."""

    reason: str | None = None
    """Why, as the node's record and every move's events carry it."""


class DrainNode(Command, tag="node.drain.v1", frozen=True, kw_only=True):
    """Drain ``node_id`` → :class:`DrainReport` (the admin key)."""

    node_id: str
    reason: str | None = None


class MarkNodeDraining(Command, tag="node.mark_draining.v1", frozen=True, kw_only=True):
    """Record that ``node_id`` is draining: new project workspaces go elsewhere."""

    node_id: str
    reason: str | None = None


class UndrainNode(Command, tag="node.undrain.v1", frozen=True, kw_only=True):
    """Take ``node_id`` back for new placements → ``NodeView`` (the admin key). What moved away
    stays where it is."""

    node_id: str


UnmovedReason = Literal[
    "local_checkout",
    "no_project_workspace",
    "no_other_node",
    "push_refused",
    "move_failed",
    "busy",
]
"""Why a workspace stays: its project workspace is a local ``cwd`` on this host; it has no
project workspace (adapter-managed); no other node is ready; the remote refused the rescue ref;
the other node could not rebuild it; or it is being archived or changed right now."""


class MovedWorkspace(Struct, frozen=True, kw_only=True):
    """An execution workspace that now lives on ``toNode``."""

    workspace_id: str
    project_workspace_id: str
    to_node: str
    cwd: str | None
    """Its worktree on the other node."""
    rescue_ref: str | None
    """The ref on the project's remote holding its work (None: nothing at all to carry)."""
    file_count: int = 0
    """Uncommitted and untracked files carried over."""
    services_restarted: list[str] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)


class UnmovedWorkspace(Struct, frozen=True, kw_only=True):
    """A workspace (or a project workspace with none) that stays on the drained node."""

    workspace_id: str | None
    project_workspace_id: str | None
    reason: UnmovedReason
    message: str
    rescue_ref: str | None = None
    """A rescue ref written on the drained node and kept there (the remote refused it)."""


class WaitingWorkspace(Struct, frozen=True, kw_only=True):
    """A workspace runs hold: it moves once they end (the node stays draining)."""

    workspace_id: str
    project_workspace_id: str
    run_ids: list[str]


class DrainReport(Struct, frozen=True, kw_only=True):
    """What a drain pass did. The node is empty when ``remaining`` is 0."""

    node_id: str
    moved: list[MovedWorkspace] = msgspec.field(default_factory=list)
    project_workspaces_moved: list[str] = msgspec.field(default_factory=list)
    not_moved: list[UnmovedWorkspace] = msgspec.field(default_factory=list)
    waiting: list[WaitingWorkspace] = msgspec.field(default_factory=list)
    remaining: int = 0
    """Open execution workspaces and project workspaces still placed on the node."""


class CarriedRef(Struct, frozen=True, kw_only=True):
    """A commit pushed under a move ref, to fetch on the receiving node."""

    ref: str
    sha: str


class MoveIn(Struct, frozen=True, kw_only=True):
    """One execution workspace to rebuild on the receiving node (``closed``: an archived one,
    whose rescue commits are carried so that a reopen finds them there)."""

    workspace_id: str
    rescue_ref: str | None
    rescue_sha: str | None
    head_sha: str | None = None
    """The worktree's HEAD when its work was saved: the rebuilt one must be at it."""
    file_count: int = 0
    closed: bool = False
    carried_refs: list[CarriedRef] = msgspec.field(default_factory=list)
    """An archived workspace's rescue commits, pushed under move refs."""
    home_relative: str | None
    """Its worktree's path under the drained node's ``CLIPYARD_HOME`` (None: an absolute
    ``worktreeParentDir``, the same path on every host)."""
    services: list[str] = msgspec.field(default_factory=list)
    """Workspace command ids of the runtime services that were running (start them again)."""


class MoveInWorkspaces(Command, tag="workspace.move_in.v1", frozen=True, kw_only=True):
    """Clone ``project_workspace_id`` here and rebuild ``workspaces`` → :class:`MoveInResult`
    (Clipyard itself only)."""

    project_workspace_id: str
    from_node: str
    workspaces: list[MoveIn]
    reason: str | None = None
    """The drain's reason, as the moves' events carry it."""


class MoveInResult(Struct, frozen=True, kw_only=True):
    """Which workspaces the receiving node rebuilt (``moved``) and which it could not."""

    moved: list[MovedWorkspace] = msgspec.field(default_factory=list)
    failed: list[UnmovedWorkspace] = msgspec.field(default_factory=list)
