"""What every endpoint class shares: the running supervisor and the principal's cause."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from eventstore import Cause, acting
from servicekit.routes import BusEndpoints

if TYPE_CHECKING:
    from contracts.base import Principal
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

    def acting(
        self, principal: Principal, reason: str, run_id: str | None = None
    ) -> AbstractContextManager[Cause]:
        """Stamp ``principal`` and ``reason`` on what the block saves."""
        return acting(cause_of(principal, reason, run_id))
