"""The :class:`~workspace_realizer.usecases.references.AgentDirectory` over the bus: asks the
heartbeat-controller (``ws.qry.agent.get``) which company an agent belongs to, as Clipyard itself
(a ``system`` principal of no company, which sees every company's agents).

``not_found`` means there is no such live agent; any other error, a timeout or no responder means
the controller could not tell, which the caller answers with 503 (retry), never with 404.
"""

from __future__ import annotations

import logging
from typing import Final

import msgspec

from contracts.agents import GetAgent
from contracts.base import Actor, ErrorReply, Ok, Principal, Struct
from contracts.errors import ErrorCode
from contracts.heartbeat_subjects import AGENT_GET
from workspace_realizer.adapters.credentials_bus import RequestBus
from workspace_realizer.domain.errors import RequestUnansweredError
from workspace_realizer.settings import SERVICE_NAME

__all__ = ["AGENT_TIMEOUT", "BusAgentDirectory"]

log = logging.getLogger(__name__)

AGENT_TIMEOUT: Final = 5.0
"""Seconds to wait for the controller (it answers from its read models)."""


class _AgentCompany(Struct, frozen=True, kw_only=True):
    """The part of the controller's ``AgentView`` this adapter reads."""

    company_id: str


class BusAgentDirectory:
    """Asks the heartbeat-controller which company an agent belongs to.

    Args:
        bus: ``runtime.bus`` (or anything with its ``request`` method).
        timeout: Seconds to wait for an answer.
    """

    def __init__(self, bus: RequestBus, *, timeout: float = AGENT_TIMEOUT) -> None:
        self._bus = bus
        self._timeout = timeout

    async def company_of(self, agent_id: str) -> str | None:
        """The company of the live agent ``agent_id``; None when the controller has none.

        Raises:
            RequestUnansweredError: The controller did not answer, or answered otherwise.
        """
        principal = Principal(company_id=None, actor=Actor(type="system", id=SERVICE_NAME))
        request = GetAgent(principal=principal, agent_id=agent_id)
        try:
            reply = await self._bus.request(AGENT_GET, request, timeout=self._timeout)
        except Exception as exc:  # could not even be sent: the controller cannot tell
            why = f"the request failed ({type(exc).__name__})"
        else:
            if isinstance(reply, ErrorReply) and reply.code == ErrorCode.NOT_FOUND:
                return None
            if isinstance(reply, Ok):
                try:
                    return msgspec.convert(reply.result, _AgentCompany).company_id
                except msgspec.ValidationError:
                    why = "its answer did not decode"
            elif isinstance(reply, ErrorReply):
                why = f"it answered {reply.code}: {reply.message}"
            else:
                why = "it answered with an operation instead of the agent"
        log.warning("the heartbeat-controller did not tell about agent %s (%s)", agent_id, why)
        raise RequestUnansweredError(
            f"Could not check assigneeAgentId {agent_id}: the workspace-realizer does not know "
            f"the agent yet and the heartbeat-controller did not answer ({why}). Nothing was "
            "changed; retry in a moment (`clipyard status` shows whether it runs).",
            field="assigneeAgentId",
            assigneeAgentId=agent_id,
        )
