"""The host part of the realizer's domain: execution workspaces, their lifecycle and operations,
and the pure rules of delivery, close readiness and isolation (docs/design/service-shape.md, the realizer's two parts)."""

from __future__ import annotations

from workspace_realizer.domain.host.operations import WorkspaceOperation
from workspace_realizer.domain.host.workspaces import ExecutionWorkspace

__all__ = ["ExecutionWorkspace", "WorkspaceOperation"]
