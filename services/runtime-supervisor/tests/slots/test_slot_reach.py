"""Adapter slots read by agent keys and run tokens (ARCHITECTURE §5.1): a run's slot and log only
for the agent's own runs (a run token: its run only), 403 for another run of the company, 404 for
another company's; the slots' health is the board's (agents are refused). The admin key reads
none of it; Clipyard itself (the controller) all of it."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from slot_world import ACME, CONTROLLER, STRANGER, Slots

from contracts.base import Actor, ErrorReply, Ok, Principal

pytestmark = pytest.mark.integration

BOARD = Principal(company_id=ACME, actor=Actor(type="board", id="board-1"))
ADMIN = Principal(company_id=None, actor=Actor(type="admin", id="admin"))


def _key(agent_id: str) -> Principal:
    return Principal(company_id=ACME, actor=Actor(type="agent", id=agent_id))


def _token(agent_id: str, run_id: str) -> Principal:
    return Principal(company_id=ACME, actor=Actor(type="agent", id=agent_id), run_id=run_id,
                     run_bound=True)  # fmt: skip


async def test_an_agent_reads_only_its_own_runs_slot_and_log_and_never_the_health(
    start_supervisor: Any, slots: Slots
) -> None:
    await start_supervisor()
    mine, sibling = str(uuid.uuid4()), str(uuid.uuid4())
    await slots.grant(mine, trusted=True)  # both runs of agent-1
    await slots.grant(sibling, trusted=True)
    for reader in (_key("agent-1"), _token("agent-1", mine), BOARD):
        assert isinstance(await slots.log(mine, principal=reader), Ok), reader
        assert isinstance(await slots.slot(mine, principal=reader), Ok), reader
    for outsider in (_key("agent-2"), _token("agent-1", sibling)):
        for reply in (await slots.log(mine, principal=outsider),
                      await slots.slot(mine, principal=outsider)):  # fmt: skip
            assert isinstance(reply, ErrorReply), outsider
            assert (reply.code, reply.status) == ("forbidden", 403), reply
            assert reply.details["runId"] == mine
    hidden = await slots.log(mine, principal=STRANGER)
    assert isinstance(hidden, ErrorReply)
    assert hidden.status == 404
    # The pool's health: the board's and Clipyard's, never an agent's.
    assert isinstance(await slots.health(BOARD), Ok)
    for agent in (_key("agent-1"), _token("agent-1", mine)):
        refused = await slots.health(agent)
        assert isinstance(refused, ErrorReply)
        assert (refused.code, refused.status) == ("forbidden", 403)
        assert "board" in refused.message
    # The admin key: no run's slot or log, no health (ARCHITECTURE §5.1); Clipyard itself: all.
    for reply, noun in ((await slots.log(mine, principal=ADMIN), "runs"),
                        (await slots.slot(mine, principal=ADMIN), "runs"),
                        (await slots.health(ADMIN), "the adapter slots")):  # fmt: skip
        assert isinstance(reply, ErrorReply), reply
        assert (reply.code, reply.status) == ("forbidden", 403), reply
        assert reply.message.startswith(f"The admin key may not read {noun}; "), reply
    for reply in (await slots.log(mine), await slots.slot(mine), await slots.health(CONTROLLER)):
        assert isinstance(reply, Ok), reply
