"""The heartbeat-controller as a real process on a real nats-server: agents, wakes and runs over
the bus, a run through its stages with the supervisor's and gateway's subjects answered by
stand-ins (``standins.py``), cancel, and recovery after a SIGKILL mid-run."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from standins import StandIns

from contracts import heartbeat_subjects as hs
from contracts.agents import (
    AgentView,
    CancelRun,
    CreateAgent,
    DeleteAgent,
    GetAgent,
    GetRun,
    ListAgents,
    ListRuns,
    RunView,
    UpdateAgent,
    WakeAccepted,
    WakeAgent,
)
from contracts.base import Actor, ErrorReply, Ok, Principal
from contracts.workspace_views import Page
from natsbus import BusClient, BusRequestError
from testkit.nats_server import start_nats_server

pytestmark = pytest.mark.integration

ACME = "c-acme"
BOARD = Principal(company_id=ACME, actor=Actor(type="board", id="board-1"))
ADMIN = Principal(company_id=None, actor=Actor(type="admin", id="admin"))
FINISHED = ("succeeded", "failed", "cancelled", "timed_out")


@pytest.fixture
def own_nats(tmp_path: Path) -> Iterator[Any]:
    """A nats-server of this test alone (the controller's store starts empty, so must its
    stream)."""
    server = start_nats_server(store_dir=tmp_path / "nats")
    yield server
    server.stop()


@pytest.fixture
async def bus(own_nats: Any) -> AsyncIterator[tuple[Any, BusClient]]:
    nc = await nats.connect(own_nats.url)
    yield nc, BusClient(nc)
    await nc.close()


@pytest.fixture
async def standins(bus: tuple[Any, BusClient]) -> AsyncIterator[StandIns]:
    nc, _ = bus
    found = StandIns(nc=nc, js=nc.jetstream())
    await found.start()
    yield found
    await found.stop()


async def start_controller(service_process: Any, own_nats: Any) -> Any:
    process = await service_process(
        "heartbeat_controller",
        env={"CLIPYARD_NATS_URL": own_nats.url, "CLIPYARD_STORE": "sqlite",
             "CLIPYARD_API_URL": "http://api.example:8123", "CLIPYARD_DISPATCH_TICK": "0.2"},
    )  # fmt: skip
    await endpoints_ready(own_nats)
    return process


async def endpoints_ready(own_nats: Any, timeout: float = 15.0) -> None:
    """Wait until the agent endpoints answer.

    A service answers ``$SRV.PING`` only once its endpoints exist, so this normally passes at
    the first request; it stays as a cheap check that they do.
    """
    nc = await nats.connect(own_nats.url)
    try:
        client, end = BusClient(nc), time.monotonic() + timeout
        while True:
            reply = await client.request(hs.AGENT_LIST, ListAgents(principal=BOARD), timeout=2.0)
            if not (isinstance(reply, ErrorReply) and reply.code == "service_unavailable"):
                return
            assert time.monotonic() < end, reply
            await asyncio.sleep(0.05)
    finally:
        await nc.close()


async def create_agent(client: BusClient, name: str = "bot") -> AgentView:
    command = CreateAgent(principal=BOARD, name=name, adapter_type="process",
                          adapter_config={"command": ["/bin/true"], "timeoutSec": 60})  # fmt: skip
    created = await client.call(hs.AGENT_CREATE, command, AgentView)
    grant = UpdateAgent(principal=ADMIN, agent_id=created.id, trust_level="trusted")
    return await client.call(hs.AGENT_UPDATE, grant, AgentView)  # only the admin key trusts


async def wake(client: BusClient, agent_id: str) -> str:
    accepted = await client.call(
        hs.AGENT_WAKE, WakeAgent(principal=BOARD, agent_id=agent_id, reason="test"), WakeAccepted
    )
    return accepted.run_id


async def run_until(client: BusClient, run_id: str, check: Any, timeout: float = 15.0) -> RunView:
    end = time.monotonic() + timeout
    while True:
        try:
            view = await client.call(hs.RUN_GET, GetRun(principal=BOARD, run_id=run_id), RunView)
        except BusRequestError as exc:
            # Not expected (a restarted controller answers pings only once its endpoints
            # exist); tolerated until the deadline all the same.
            if exc.code != "service_unavailable" or time.monotonic() > end:
                raise
            await asyncio.sleep(0.05)
            continue
        if check(view):
            return view
        assert time.monotonic() < end, f"run {run_id} stuck at {view.status} {view.stage}"
        await asyncio.sleep(0.05)


async def test_an_agent_woken_over_the_bus_runs_through_its_stages(
    service_process: Any, own_nats: Any, bus: tuple[Any, BusClient], standins: StandIns
) -> None:
    _, client = bus
    await start_controller(service_process, own_nats)
    agent = await create_agent(client)
    again = await client.call(hs.AGENT_GET, GetAgent(principal=BOARD, agent_id=agent.id), AgentView)
    assert again.name == "bot"
    run_id = await wake(client, agent.id)
    view = await run_until(client, run_id, lambda v: v.status in FINISHED)
    assert view.status == "succeeded", view
    assert (view.stage, view.exit_code, view.usage, view.result) == (
        "cleanup",
        0,
        {"tokens": 7},
        "done",
    )
    assert standins.of(run_id) == ["acquire_slot", "mint", "launch", "release_slot"]
    env = standins.envs[run_id]
    assert env["CLIPYARD_API_KEY"] == env["PAPERCLIP_API_KEY"] == standins.tokens[run_id]
    assert env["CLIPYARD_API_URL"] == "http://api.example:8123"
    assert env["CLIPYARD_RUN_ID"] == run_id
    listed = await client.call(hs.RUN_LIST, ListRuns(principal=BOARD), Page[RunView])
    assert [r.id for r in listed.items] == [run_id]


async def test_the_admin_key_only_grants_trust_and_is_refused_the_rest_over_the_bus(
    service_process: Any, own_nats: Any, bus: tuple[Any, BusClient], standins: StandIns
) -> None:
    # The gateway refuses the admin key on these routes; the controller does too (ARCHITECTURE
    # §5.1: every service applies the kind-level rule), whoever reaches its subjects. The admin
    # key changes only an agent's trust (docs/design/isolation.md).
    _, client = bus
    standins.hang = True
    await start_controller(service_process, own_nats)
    agent = await create_agent(client)
    run_id = await wake(client, agent.id)
    asked = [
        (hs.AGENT_UPDATE, UpdateAgent(principal=ADMIN, agent_id=agent.id, name="renamed")),
        (hs.AGENT_DELETE, DeleteAgent(principal=ADMIN, agent_id=agent.id)),
        (hs.AGENT_WAKE, WakeAgent(principal=ADMIN, agent_id=agent.id)),
        (hs.RUN_GET, GetRun(principal=ADMIN, run_id=run_id)),
        (hs.RUN_CANCEL, CancelRun(principal=ADMIN, run_id=run_id)),
    ]
    for subject, message in asked:
        reply = await client.request(subject, message, timeout=5.0)
        assert isinstance(reply, ErrorReply), (subject, reply)
        assert (reply.code, reply.status) == ("forbidden", 403), (subject, reply)
        assert reply.message.startswith("The admin key "), reply
    again = await client.request(hs.AGENT_GET, GetAgent(principal=BOARD, agent_id=agent.id))
    assert isinstance(again, Ok), again
    assert again.result["trustLevel"] == "trusted"
    view = await client.call(hs.RUN_GET, GetRun(principal=BOARD, run_id=run_id), RunView)
    assert not view.cancel_requested


async def test_cancel_over_the_bus_kills_the_adapter(
    service_process: Any, own_nats: Any, bus: tuple[Any, BusClient], standins: StandIns
) -> None:
    _, client = bus
    standins.hang = True
    await start_controller(service_process, own_nats)
    agent = await create_agent(client)
    run_id = await wake(client, agent.id)
    await run_until(client, run_id, lambda v: v.stage == "result_collection")
    await client.call(hs.RUN_CANCEL, CancelRun(principal=BOARD, run_id=run_id), RunView)
    view = await run_until(client, run_id, lambda v: v.status in FINISHED)
    assert (view.status, view.error_code) == ("cancelled", "cancelled")
    assert standins.of(run_id)[-2:] == ["kill", "release_slot"]


async def test_a_controller_killed_mid_run_recovers_the_run_at_restart(
    service_process: Any, own_nats: Any, bus: tuple[Any, BusClient], standins: StandIns
) -> None:
    _, client = bus
    standins.hang = True
    controller = await start_controller(service_process, own_nats)
    agent = await create_agent(client)
    run_id = await wake(client, agent.id)
    await run_until(client, run_id, lambda v: v.stage == "result_collection")
    controller.kill()  # SIGKILL: no cleanup at all
    await standins.end(run_id, agent.id, "exited", 0, publish=False)
    await controller.restart()
    view = await run_until(client, run_id, lambda v: v.status in FINISHED)
    assert view.status == "succeeded", view
    assert standins.of(run_id)[-2:] == ["get_run_slot", "release_slot"]
    running = await client.call(hs.RUN_LIST, ListRuns(principal=BOARD), Page[RunView])
    assert [r.status for r in running.items] == ["succeeded"]


async def test_the_endpoints_answer_while_recovery_waits_and_a_cancel_then_still_works(
    service_process: Any, own_nats: Any, bus: tuple[Any, BusClient], standins: StandIns
) -> None:
    _, client = bus
    standins.hang = True
    controller = await start_controller(service_process, own_nats)
    agent = await create_agent(client)
    run_id = await wake(client, agent.id)
    await run_until(client, run_id, lambda v: v.stage == "result_collection")
    controller.kill()
    # The supervisor answers recovery's GetRunSlot only when the test lets it.
    hold = standins.slot_of_hold = asyncio.Event()
    await controller.restart()
    await endpoints_ready(own_nats)
    # The controller announces itself before recovery runs: wait until recovery has asked.
    end = time.monotonic() + 15.0
    while standins.of(run_id)[-1:] != ["get_run_slot"]:
        assert time.monotonic() < end, f"recovery never asked for the slot: {standins.calls}"
        await asyncio.sleep(0.05)
    # Recovery now waits (for as long as the hold is closed); the endpoints answer meanwhile
    # (had they waited for recovery, these calls would time out, the hold being closed).
    query = GetRun(principal=BOARD, run_id=run_id)
    assert (await client.call(hs.RUN_GET, query, RunView, timeout=15.0)).status == "running"
    cancel = CancelRun(principal=BOARD, run_id=run_id)
    view = await client.call(hs.RUN_CANCEL, cancel, RunView, timeout=15.0)
    assert view.cancel_requested is True
    # Answered well inside recovery's first phase (20 s, after which a start that waited for
    # recovery would serve anyway): the endpoints did not wait for it.
    waited = time.monotonic() - standins.slot_asked_at[run_id]
    assert waited < 10.0, f"the endpoints answered {waited:.1f} s after recovery asked"
    assert not hold.is_set()
    assert standins.of(run_id)[-1:] == ["get_run_slot"]  # recovery is still waiting for it
    hold.set()
    view = await run_until(client, run_id, lambda v: v.status in FINISHED, timeout=20.0)
    assert (view.status, view.error_code) == ("cancelled", "cancelled")
    assert standins.of(run_id)[-3:] == ["get_run_slot", "kill", "release_slot"]
