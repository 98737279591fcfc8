"""Domain of the workspace-realizer: aggregates with past-tense events, their invariants and
errors. Pure: no I/O."""

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
from workspace_realizer.domain.operations import WorkspaceOperation
from workspace_realizer.domain.project_workspaces import ProjectWorkspace
from workspace_realizer.domain.projects import Project
from workspace_realizer.domain.workspaces import ExecutionWorkspace

__all__ = [
    "TERMINAL_STATUSES",
    "AgentCopy",
    "CloseBlockedError",
    "CompanyCopy",
    "ExecutionWorkspace",
    "FenceError",
    "HostStepError",
    "InvalidInputError",
    "Issue",
    "NotFoundError",
    "Project",
    "ProjectWorkspace",
    "RequiresProjectError",
    "StateConflictError",
    "WorkspaceOperation",
    "WorkspaceRealizerError",
    "WorkspaceValidationError",
]
