"""Which worker node holds an execution workspace (docs/scale-out.md, "Worker nodes"): a store
read that any part of the realizer may make before it serves a request or sends it on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contracts.errors import DetailedError

if TYPE_CHECKING:
    from servicekit.access import Access
    from workspace_realizer.application import WorkspaceRealizerApplication

__all__ = ["workspace_node"]


def workspace_node(
    app: WorkspaceRealizerApplication, workspace_id: str, access: Access | None = None
) -> str | None:
    """The node of an execution workspace ``access`` may see (None: no such workspace here, or
    not the principal's: the node asked answers that itself, never another node)."""
    if access is None:
        found = app.workspaces.get(workspace_id)
    else:
        try:
            found = app.workspace_of(access, workspace_id)
        except DetailedError:
            return None
    return None if found is None else found.node_id
