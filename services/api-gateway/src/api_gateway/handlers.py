"""The gateway's bus side: the run-token endpoint and the inbox of the heartbeat controller.

``ws.cmd.run_token.mint`` (only the controller may send it: nats.conf) answers the clear token in
its ``ok`` reply and nowhere else: the store keeps its hash, the reply's ``repr`` hides it, and
nothing here logs it. The controller's ``run.finished.v1`` revokes the run's token (and refuses
any later mint for it); ``agent.deleted.v1`` revokes the agent's keys and marks the agent deleted
(no key is created for it afterwards, whatever the controller answered a moment before).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from api_gateway.domain import ForbiddenError
from contracts.heartbeat_subjects import RUN_TOKEN_MINT
from contracts.run_events import AgentDeleted, RunFinished
from contracts.run_tokens import MintRunToken, RunTokenIssued
from eventstore import Cause, acting

if TYPE_CHECKING:
    from eventsourcing.persistence import Tracking

    from api_gateway.application import GatewayApplication
    from eventstore import StoreExecutor
    from natsbus import RequestContext
    from servicekit import ServiceRuntime

__all__ = [
    "controller_inbox",
    "mint_run_token_handler",
    "register_bus_endpoints",
]

MINT_ENDPOINT: Final = "mint-run-token"


def controller_inbox(app: GatewayApplication, event: Any, tracking: Tracking) -> None:
    """The handler of the heartbeat controller's events (``ServiceSpec.upstreams``): a finished
    run's tokens end, a deleted agent's keys are revoked."""
    if isinstance(event, RunFinished) and event.company_id:
        app.end_run_tokens(
            company_id=event.company_id,
            agent_id=event.agent_id,
            run_id=event.aggregate_id,
            status=event.status,
            tracking=tracking,
        )
    elif isinstance(event, AgentDeleted) and event.company_id:
        app.revoke_agent_keys(event.company_id, event.aggregate_id, tracking)


def mint_run_token_handler(
    app: GatewayApplication, executor: StoreExecutor
) -> Callable[[MintRunToken, RequestContext], Awaitable[RunTokenIssued]]:
    """The handler of ``MintRunToken``: a system principal of the run's company only."""

    async def mint(request: MintRunToken, ctx: RequestContext) -> RunTokenIssued:
        principal = request.principal
        if principal.actor.type != "system" or not principal.company_id:
            raise ForbiddenError(
                "Only the heartbeat controller, acting as the system for the run's company, "
                "mints run tokens.",
                actorType=principal.actor.type,
            )
        use_case = partial(
            app.mint_run_token,
            company_id=principal.company_id,
            agent_id=request.agent_id,
            run_id=request.run_id,
            issue_id=request.issue_id,
            workspace_id=request.workspace_id,
            expires_at=request.expires_at,
        )
        cause = Cause(actor=principal.actor, run_id=request.run_id, company_id=principal.company_id)
        with acting(cause):
            record, token = await executor.run(use_case)
        return RunTokenIssued(token_id=record.id, token=token, expires_at=record.expires_at)

    return mint


async def register_bus_endpoints(runtime: ServiceRuntime) -> None:
    """Serve ``ws.cmd.run_token.mint`` on the gateway's micro service."""
    app: GatewayApplication = runtime.app  # type: ignore[assignment]
    handler = mint_run_token_handler(app, runtime.executor)
    await runtime.service.add_endpoint(MINT_ENDPOINT, RUN_TOKEN_MINT, handler, MintRunToken)
