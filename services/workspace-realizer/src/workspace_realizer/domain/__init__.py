"""Domain of the workspace-realizer: aggregates with past-tense events, their invariants and
errors. Pure: no I/O.

The company-wide part's aggregates are re-exported here; the host part's (execution workspaces,
their operations) are :mod:`workspace_realizer.domain.host`'s (docs/design/service-shape.md, the realizer's two parts)."""

from __future__ import annotations

from workspace_realizer.domain.agents import AgentCopy
from workspace_realizer.domain.companies import CompanyCopy
from workspace_realizer.domain.errors import (
    CloseBlockedError,
    FenceError,
    HostStepError,
    InvalidInputError,
    NotFoundError,
    RequiresProjectError,
    StateConflictError,
    WorkspaceRealizerError,
    WorkspaceValidationError,
)
from workspace_realizer.domain.issues import TERMINAL_STATUSES, Issue
from workspace_realizer.domain.project_workspaces import ProjectWorkspace
from workspace_realizer.domain.projects import Project

__all__ = [
    "TERMINAL_STATUSES",
    "AgentCopy",
    "CloseBlockedError",
    "CompanyCopy",
    "FenceError",
    "HostStepError",
    "InvalidInputError",
    "Issue",
    "NotFoundError",
    "Project",
    "ProjectWorkspace",
    "RequiresProjectError",
    "StateConflictError",
    "WorkspaceRealizerError",
    "WorkspaceValidationError",
]
