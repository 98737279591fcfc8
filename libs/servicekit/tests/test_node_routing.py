"""A request for another node's record is sent on to that node once, with its headers and
what is left of its time; a node that does not answer is named."""

from __future__ import annotations

import time
from typing import Any

import pytest

from contracts.base import Actor, ErrorReply, Ok, Principal, Query
from natsbus import RequestContext
from natsbus.unanswered import unavailable
from servicekit.node_routing import (
    FORWARDED_HEADER,
    NodeRouter,
    NodeUnreachableError,
    WrongNodeError,
)


class Ask(Query, tag="test.ask.v1", frozen=True, kw_only=True):
    what: str


class Bus:
    """Records what is sent and answers from a table (the bus's own 503 for the rest)."""

    def __init__(self, replies: dict[str, Any]) -> None:
        self.replies = replies
        self.sent: list[tuple[str, Any, float, dict[str, str]]] = []

    async def request(
        self, subject: str, message: Any, *, timeout: float, headers: dict[str, str]
    ) -> Any:
        self.sent.append((subject, message, timeout, headers))
        return self.replies.get(subject) or unavailable(subject, "is not running", delivered=False)


ASK = Ask(principal=Principal(company_id="c", actor=Actor(type="board", id="b")), what="x")


def on(node: str) -> str:
    return f"ws.qry.workspace.get.{node}"


def test_a_record_without_a_node_or_of_this_node_is_served_here() -> None:
    router = NodeRouter(Bus({}), "a")  # type: ignore[arg-type]
    assert router.is_here("a")
    assert router.is_here(None)
    assert not router.is_here("b")


async def test_another_nodes_record_gets_that_nodes_answer_unchanged() -> None:
    answer = Ok(result={"id": "w1"})
    bus = Bus({on("b"): answer})
    router = NodeRouter(bus, "a")  # type: ignore[arg-type]
    ctx = RequestContext(
        subject="ws.qry.workspace.get",
        headers={"Clipyard-Request-Id": "r1", "traceparent": "00-x-y-01", "Clipyard-Deadline": "1"},
        deadline=time.time() + 30,
    )
    reply = await router.forward("b", on, ASK, ctx, what="execution workspace w1")
    assert reply is answer
    subject, message, timeout, headers = bus.sent[0]
    assert (subject, message) == (on("b"), ASK)
    assert 25 < timeout <= 29  # what is left of the asker's time, less the hop back
    assert headers == {"Clipyard-Request-Id": "r1", FORWARDED_HEADER: "a"}


async def test_a_request_sent_on_already_is_never_sent_on_again() -> None:
    bus = Bus({})
    router = NodeRouter(bus, "b")  # type: ignore[arg-type]
    ctx = RequestContext(subject=on("b"), headers={FORWARDED_HEADER: "a"})
    with pytest.raises(WrongNodeError) as refused:
        await router.forward("c", on, ASK, ctx, what="execution workspace w1")
    assert refused.value.details == {"nodeId": "c"}
    assert "node c" in str(refused.value)
    assert not bus.sent


async def test_a_node_that_does_not_answer_is_named_and_nothing_is_done() -> None:
    router = NodeRouter(Bus({}), "a")  # type: ignore[arg-type]
    ctx = RequestContext(subject="ws.qry.workspace.get")
    with pytest.raises(NodeUnreachableError) as down:
        await router.forward("b", on, ASK, ctx, what="execution workspace w1")
    assert down.value.code == "node_unreachable"
    assert down.value.details == {"nodeId": "b"}
    assert "worker node b" in str(down.value)


async def test_the_nodes_own_503_is_its_answer_not_unreachable() -> None:
    busy = ErrorReply(code="service_unavailable", message="store down", status=503)
    router = NodeRouter(Bus({on("b"): busy}), "a")  # type: ignore[arg-type]
    reply = await router.forward("b", on, ASK, RequestContext(subject="x"), what="w1")
    assert reply is busy


async def test_a_503_after_delivery_is_passed_on_not_called_unreachable() -> None:
    cut = unavailable(on("b"), "could not be reached to the end")  # it may have been done
    router = NodeRouter(Bus({on("b"): cut}), "a")  # type: ignore[arg-type]
    reply = await router.forward("b", on, ASK, RequestContext(subject="x"), what="w1")
    assert reply is cut


async def test_the_node_answers_a_margin_before_the_asker_stops_waiting() -> None:
    bus = Bus({on("b"): Ok(result={})})
    router = NodeRouter(bus, "a")  # type: ignore[arg-type]
    ctx = RequestContext(subject="x", deadline=time.time() + 10)
    await router.forward("b", on, ASK, ctx, what="w1")
    assert 8.5 < bus.sent[0][2] <= 9.0  # RELAY_MARGIN (1 s) kept for the hop back
