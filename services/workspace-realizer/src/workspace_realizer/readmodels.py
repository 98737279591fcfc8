"""The realizer's read models: a current copy of every aggregate it owns, kept by projecting each
stored event onto it with the aggregate's own logic, plus a few indexes.

Rebuilt from the notification log at start and kept current after each save (``ServiceApplication``);
queries read these copies on the store thread, use cases load aggregates from the repository.
"""

from __future__ import annotations

from typing import Any, TypeVar

from eventstore import ClipyardAggregate, ServiceApplication, aggregate_state
from workspace_realizer.domain import (
    AgentCopy,
    CompanyCopy,
    Issue,
    Project,
    ProjectWorkspace,
)
from workspace_realizer.domain.agents import agent_copy_id
from workspace_realizer.domain.host import ExecutionWorkspace, WorkspaceOperation
from workspace_realizer.domain.host.lifecycle import WorkspaceLifecycle

__all__ = ["RealizerReadModels"]

A = TypeVar("A")

_KINDS: tuple[tuple[str, type[Any]], ...] = (
    ("companies", CompanyCopy),
    ("agents", AgentCopy),
    ("projects", Project),
    ("project_workspaces", ProjectWorkspace),
    ("issues", Issue),
    ("workspaces", WorkspaceLifecycle),  # ExecutionWorkspace's events and its lifecycle's
    ("operations", WorkspaceOperation),
)


class RealizerReadModels(ServiceApplication):
    """Projection of every realizer aggregate, and the indexes the queries need."""

    companies: dict[str, CompanyCopy]
    agents: dict[str, AgentCopy]
    """The controller's agents (company, deleted), by the id of their copy."""
    projects: dict[str, Project]
    project_workspaces: dict[str, ProjectWorkspace]
    issues: dict[str, Issue]
    workspaces: dict[str, ExecutionWorkspace]
    operations: dict[str, WorkspaceOperation]
    company_copies: dict[str, str]
    """Gateway company id -> the id of its ``CompanyCopy``."""
    identifiers: dict[tuple[str, str], str]
    """``(companyId, identifier)`` -> issue id."""
    operations_by_workspace: dict[str, list[str]]
    run_holders: dict[str, set[str]]
    """Workspace id -> ids of the runs holding it (the controller's ``run.workspace_leased`` /
    ``run.workspace_released`` / ``run.finished``, kept on the workspaces' own events)."""

    def init_read_models(self) -> None:
        """Empty read models (before every rebuild)."""
        for name, _ in _KINDS:
            setattr(self, name, {})
        self.company_copies = {}
        self.identifiers = {}
        self.operations_by_workspace = {}
        self.run_holders = {}

    def project(self, domain_event: Any) -> None:
        """Apply one stored event to the copy of its aggregate."""
        for name, kind in _KINDS:
            if isinstance(domain_event, kind.Event):
                models: dict[str, ClipyardAggregate] = getattr(self, name)
                key = str(domain_event.originator_id)
                aggregate = domain_event.mutate(models.get(key))
                models[key] = aggregate
                self._index(aggregate, domain_event)
                return

    def _index(self, aggregate: Any, domain_event: Any) -> None:
        key = str(aggregate.id)
        if isinstance(aggregate, CompanyCopy):
            self.company_copies[aggregate.company_id] = key
        elif isinstance(aggregate, Issue):
            ident = (aggregate.company_id, aggregate.identifier)
            if aggregate.deleted:
                self.identifiers.pop(ident, None)
            else:
                self.identifiers[ident] = key
        elif isinstance(aggregate, ExecutionWorkspace):
            if aggregate.run_ids:
                self.run_holders[key] = set(aggregate.run_ids)
            else:
                self.run_holders.pop(key, None)
        elif (
            isinstance(aggregate, WorkspaceOperation)
            and aggregate.execution_workspace_id
            and domain_event.originator_version == 1  # its ``Finished`` adds no second row
        ):
            ids = self.operations_by_workspace.setdefault(aggregate.execution_workspace_id, [])
            ids.append(key)

    def read_models(self) -> dict[str, object]:
        """The read models as plain data, for replay verification."""
        models = {
            name: {key: aggregate_state(agg) for key, agg in getattr(self, name).items()}
            for name, _ in _KINDS
        }
        return {
            **models,
            "identifiers": {f"{c}/{i}": issue for (c, i), issue in self.identifiers.items()},
            "operations_by_workspace": dict(self.operations_by_workspace),
        }

    # -- plain lookups (no access check) -------------------------------------------------------

    def company_copy(self, company_id: str) -> CompanyCopy | None:
        """The realizer's copy of a company, if its ``company.created.v1`` arrived."""
        key = self.company_copies.get(company_id)
        return self.companies.get(key) if key else None

    def agent_copy(self, agent_id: str) -> AgentCopy | None:
        """The realizer's copy of an agent, if its ``agent.created.v1`` (or ``agent.deleted.v1``)
        arrived."""
        return self.agents.get(str(agent_copy_id(agent_id)))

    def issues_linked_to(self, workspace: ExecutionWorkspace) -> list[Issue]:
        """The source issue and every issue whose current workspace this is (not deleted)."""
        ws_id = str(workspace.id)
        return [
            issue
            for issue in self.issues.values()
            if not issue.deleted
            and (
                str(issue.id) == workspace.source_issue_id or issue.execution_workspace_id == ws_id
            )
        ]
