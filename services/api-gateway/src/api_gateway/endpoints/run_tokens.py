"""The run-token endpoint: ``ws.cmd.run_token.mint``.

Only the controller may send it (nats.conf). It answers the clear token in its ``ok`` reply and
nowhere else: the store keeps its hash, the reply's ``repr`` hides it, and nothing here logs it.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Final

from api_gateway.domain import ForbiddenError
from contracts.heartbeat_subjects import RUN_TOKEN_MINT
from contracts.run_tokens import MintRunToken, RunTokenIssued
from eventstore import Cause, acting
from servicekit.routes import BusEndpoints, Route

if TYPE_CHECKING:
    from collections.abc import Sequence

    from api_gateway.application import GatewayApplication
    from eventstore import StoreExecutor
    from natsbus import RequestContext

__all__ = ["MINT_ENDPOINT", "RunTokenEndpoints"]

MINT_ENDPOINT: Final = "mint-run-token"


class RunTokenEndpoints(BusEndpoints):
    """The bus endpoints of run tokens: the controller's mint."""

    def __init__(self, app: GatewayApplication, executor: StoreExecutor) -> None:
        """Serve from ``app``, running its use cases on ``executor`` (the store's thread)."""
        self.app = app
        self.executor = executor

    async def mint(self, request: MintRunToken, ctx: RequestContext) -> RunTokenIssued:
        """Mint the run's token: a system principal of the run's company only.

        Raises:
            ForbiddenError: The principal is not the system acting for a company.
        """
        principal = request.principal
        if principal.actor.type != "system" or not principal.company_id:
            raise ForbiddenError(
                "Only the heartbeat controller, acting as the system for the run's company, "
                "mints run tokens.",
                actorType=principal.actor.type,
            )
        use_case = partial(
            self.app.mint_run_token,
            company_id=principal.company_id,
            agent_id=request.agent_id,
            run_id=request.run_id,
            issue_id=request.issue_id,
            workspace_id=request.workspace_id,
            expires_at=request.expires_at,
        )
        cause = Cause(actor=principal.actor, run_id=request.run_id, company_id=principal.company_id)
        with acting(cause):
            record, token = await self.executor.run(use_case)
        return RunTokenIssued(token_id=record.id, token=token, expires_at=record.expires_at)

    def routes(self) -> Sequence[Route]:
        """``ws.cmd.run_token.mint``."""
        return (Route(MINT_ENDPOINT, RUN_TOKEN_MINT, self.mint, MintRunToken),)
