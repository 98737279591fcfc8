"""The workspace-realizer's eventsourcing application: its use cases and read models.

Use cases are a few lines each (check, load, one aggregate command, save) and run on the store's
thread; the host work of realize, archive and reopen happens in the orchestrators around them.
"""

from __future__ import annotations

from workspace_realizer.usecases.agents import AgentCopyUseCases
from workspace_realizer.usecases.catalog import CatalogUseCases
from workspace_realizer.usecases.issues import IssueUseCases
from workspace_realizer.usecases.runs import RunLeaseUseCases
from workspace_realizer.usecases.workspaces import WorkspaceUseCases

__all__ = ["WorkspaceRealizerApplication"]


class WorkspaceRealizerApplication(
    CatalogUseCases, IssueUseCases, WorkspaceUseCases, RunLeaseUseCases, AgentCopyUseCases
):
    """Projects, project workspaces, issues, execution workspaces and their operations, which
    runs hold each workspace, and which company each agent belongs to; the only writer of the
    realizer's store."""
