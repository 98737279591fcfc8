"""What every endpoint group shares: the running supervisor, the principal's cause, adding an
endpoint."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from eventstore import Cause, acting

if TYPE_CHECKING:
    from contracts.base import Principal
    from natsbus.service import Handler
    from runtime_supervisor.context import Supervisor
    from servicekit import ServiceRuntime

__all__ = ["Endpoints", "cause_of"]


def cause_of(principal: Principal, reason: str, run_id: str | None = None) -> Cause:
    """The cause of a change asked for by ``principal`` (for ``run_id``, default its own)."""
    return Cause(
        actor=principal.actor,
        run_id=run_id or principal.run_id,
        reason=reason,
        company_id=principal.company_id,
    )


class Endpoints:
    """Helpers bound to one running supervisor."""

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

    async def add(self, name: str, subject: str, handler: Handler[Any], request_type: Any) -> None:
        """Add one endpoint to the service."""
        await self.runtime.service.add_endpoint(name, subject, handler, request_type)
