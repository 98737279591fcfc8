"""What every endpoint class shares: the running supervisor and the principal's cause."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from eventstore import Cause, acting
from servicekit.node_routing import NodeRouter
from servicekit.routes import BusEndpoints

if TYPE_CHECKING:
    from contracts.base import Accepted, ErrorReply, Ok, Principal
    from natsbus import RequestContext
    from runtime_supervisor.orchestration.context import Supervisor
    from servicekit import ServiceRuntime

__all__ = ["SupervisorEndpoints", "cause_of"]


def cause_of(principal: Principal, reason: str, run_id: str | None = None) -> Cause:
    """The cause of a change asked for by ``principal`` (for ``run_id``, default its own)."""
    return Cause(
        actor=principal.actor,
        run_id=run_id or principal.run_id,
        reason=reason,
        company_id=principal.company_id,
    )


class SupervisorEndpoints(BusEndpoints):
    """Endpoints bound to one running supervisor: its orchestration's context, its application
    and the node its command subjects are on."""

    def __init__(self, runtime: ServiceRuntime, sup: Supervisor) -> None:
        self.runtime = runtime
        self.sup = sup
        self.app = sup.app
        self.node = runtime.settings.node_id
        self.router = NodeRouter(runtime.bus, self.node)

    def acting(
        self, principal: Principal, reason: str, run_id: str | None = None
    ) -> AbstractContextManager[Cause]:
        """Stamp ``principal`` and ``reason`` on what the block saves."""
        return acting(cause_of(principal, reason, run_id))

    async def on_its_node(
        self,
        node: str | None,
        subject_of: Callable[[str], str],
        message: Any,
        ctx: RequestContext,
        what: str,
    ) -> Ok | Accepted | ErrorReply | None:
        """The answer of ``node``'s supervisor when the record is not this node's
        (:mod:`servicekit.node_routing`: its processes and files are there); None: serve it
        here."""
        if self.router.is_here(node):
            return None
        assert node is not None
        return await self.router.forward(node, subject_of, message, ctx, what=what)
