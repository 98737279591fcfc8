"""The agent directory over the bus (``adapters/agents_bus.py``), against a fake bus with
``runtime.bus``'s ``request`` signature; replies go through the wire codec as on the real bus."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from contracts.agents import GetAgent
from contracts.base import Accepted, ErrorReply, Ok
from contracts.errors import ErrorCode
from contracts.heartbeat_subjects import AGENT_GET
from natsbus.codec import decode, decode_reply, encode
from natsbus.errors import error_reply
from workspace_realizer.adapters.agents_bus import AGENT_TIMEOUT, BusAgentDirectory
from workspace_realizer.domain.errors import RequestUnansweredError

Reply = Ok | ErrorReply | Accepted


@dataclass
class FakeBus:
    """Answers every request with ``reply`` (raises it when it is an exception)."""

    reply: Reply | Exception
    sent: list[tuple[str, Any, float]] = field(default_factory=list)

    async def request(
        self,
        subject: str,
        message: Any,
        *,
        timeout: float = 110.0,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        self.sent.append((subject, decode(encode(message), type(message)), timeout))
        if isinstance(self.reply, Exception):
            raise self.reply
        return decode_reply(encode(self.reply))


async def test_the_controller_names_the_company_as_clipyard_itself() -> None:
    bus = FakeBus(Ok(result={"id": "a-1", "companyId": "c-acme", "name": "bot", "extra": 1}))
    assert await BusAgentDirectory(bus).company_of("a-1") == "c-acme"
    [(subject, request, timeout)] = bus.sent
    assert (subject, timeout) == (AGENT_GET, AGENT_TIMEOUT)
    assert isinstance(request, GetAgent)
    assert request.agent_id == "a-1"
    assert (request.principal.company_id, request.principal.actor.type) == (None, "system")


async def test_not_found_is_no_such_agent() -> None:
    bus = FakeBus(error_reply(ErrorCode.NOT_FOUND, "There is no agent a-1."))
    assert await BusAgentDirectory(bus).company_of("a-1") is None


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (error_reply(ErrorCode.TIMEOUT, "no answer"), "timeout"),
        (error_reply(ErrorCode.SERVICE_UNAVAILABLE, "no responders"), "service_unavailable"),
        (Accepted(operation_id="op-1"), "an operation"),
        (Ok(result={"id": "a-1"}), "did not decode"),
        (ConnectionError("closed"), "ConnectionError"),
    ],
)
async def test_no_answer_is_unanswered_never_not_found(reply: Any, why: str) -> None:
    with pytest.raises(RequestUnansweredError) as caught:
        await BusAgentDirectory(FakeBus(reply)).company_of("a-1")
    assert caught.value.code == "service_unavailable"
    assert caught.value.details == {"field": "assigneeAgentId", "assigneeAgentId": "a-1"}
    assert why in str(caught.value)
    assert "retry" in str(caught.value)
