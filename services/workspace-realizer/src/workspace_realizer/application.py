"""The workspace-realizer's eventsourcing application: its use cases and read models.

Use cases are a few lines each (check, load, one aggregate command, save) and run on the store's
thread; the host work of realize, archive and reopen happens in the orchestrators around them.
The company-wide part's use cases (catalog, issues, the agents' copy) come first, the host part's
(execution workspaces, run leases) after (docs/design/service-shape.md, the realizer's two parts); the port through which
the company-wide part checks host paths is wired here to this process's host part.
"""

from __future__ import annotations

from typing import ClassVar

from workspace_realizer.adapters.host_paths import HostPathChecks
from workspace_realizer.usecases.agents import AgentCopyUseCases
from workspace_realizer.usecases.catalog import CatalogUseCases
from workspace_realizer.usecases.host.moves import MoveUseCases
from workspace_realizer.usecases.host.runs import RunLeaseUseCases
from workspace_realizer.usecases.host.workspaces import WorkspaceUseCases
from workspace_realizer.usecases.issues import IssueUseCases
from workspace_realizer.usecases.ports import HostPaths

__all__ = ["WorkspaceRealizerApplication"]


class WorkspaceRealizerApplication(
    CatalogUseCases,
    IssueUseCases,
    WorkspaceUseCases,
    MoveUseCases,
    RunLeaseUseCases,
    AgentCopyUseCases,
):
    """Projects, project workspaces, issues, execution workspaces and their operations, which
    runs hold each workspace, and which company each agent belongs to; the only writer of the
    realizer's store."""

    host_paths: ClassVar[HostPaths] = HostPathChecks()  # type: ignore[misc]
