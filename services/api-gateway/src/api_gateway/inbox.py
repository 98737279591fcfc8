"""The gateway's inbox: the heartbeat controller's events.

The controller's ``run.finished.v1`` revokes the run's token (and refuses any later mint for it);
``agent.deleted.v1`` revokes the agent's keys and marks the agent deleted (no key is created for it
afterwards, whatever the controller answered a moment before). Each runs on the store's thread and
saves with the upstream position, in one transaction; other events are left to the inbox, which
records their position.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contracts.run_events import AgentDeleted, RunFinished

if TYPE_CHECKING:
    from eventsourcing.persistence import Tracking

    from api_gateway.application import GatewayApplication

__all__ = ["controller_inbox"]


def controller_inbox(app: GatewayApplication, event: Any, tracking: Tracking) -> None:
    """The handler of the heartbeat controller's events (``ServiceSpec.upstreams``): a finished
    run's tokens end, a deleted agent's keys are revoked."""
    match event:
        case RunFinished() if event.company_id:
            app.end_run_tokens(
                company_id=event.company_id,
                agent_id=event.agent_id,
                run_id=event.aggregate_id,
                status=event.status,
                tracking=tracking,
            )
        case AgentDeleted() if event.company_id:
            app.revoke_agent_keys(event.company_id, event.aggregate_id, tracking)
