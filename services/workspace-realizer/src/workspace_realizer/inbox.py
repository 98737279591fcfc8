"""The handlers of the upstream services' events (ARCHITECTURE §3), one ``match`` per upstream;
each change is saved with its inbox position.

- api-gateway: ``company.created.v1`` keeps each company's issue prefix,
  ``company.host_access_changed.v1`` what of the host it may name (company-wide part);
- heartbeat-controller: ``agent.created.v1`` and ``agent.deleted.v1`` keep the copy of each
  agent's company (company-wide part, for ``assigneeAgentId``); ``run.workspace_leased``,
  ``run.workspace_released`` and ``run.finished`` move the workspace a run holds (host part);
  every other event only advances the inbox.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contracts.gateway import CompanyCreated, CompanyHostAccessChanged
from contracts.run_events import AgentCreated, AgentDeleted

if TYPE_CHECKING:
    from eventsourcing.persistence import Tracking

    from workspace_realizer.application import WorkspaceRealizerApplication

__all__ = ["controller_inbox", "gateway_inbox"]


def gateway_inbox(app: WorkspaceRealizerApplication, event: Any, tracking: Tracking) -> None:
    """The handler of the gateway's events: keep each company's issue prefix and host access."""
    match event:
        case CompanyCreated(company_id=company_id) if company_id:
            app.register_company(company_id, event.name, event.issue_prefix, tracking)
        case CompanyHostAccessChanged(company_id=company_id) if company_id:
            app.register_host_access(
                company_id, event.host_trusted, list(event.allowed_roots), tracking
            )
        case _:
            return  # the gateway's other events are not the realizer's


def controller_inbox(app: WorkspaceRealizerApplication, event: Any, tracking: Tracking) -> None:
    """The handler of the heartbeat-controller's events: ``agent.created`` and ``agent.deleted``
    keep the copy of each agent's company; the run events (``run.workspace_leased`` makes the
    workspace ``active``; ``run.workspace_released`` and ``run.finished`` let it go ``idle`` or
    ``in_review`` once no run holds it) and every other event go to the run leases."""
    match event:
        case AgentCreated() | AgentDeleted():
            app.note_agent_event(event, tracking)
        case _:
            app.note_run_event(event, tracking)
