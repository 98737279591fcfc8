"""Two Clipyard stacks on one host (two homes, two buses, ``CLIPYARD_SLOTS=20``) each run 20
untrusted agent runs of 5 s at once: all 40 end by themselves. Before each stack had its own
identities, both ran agents as the same ``clipyard-slot-<n>`` users and each killed every process
of a slot user around its runs, so one stack's start killed the other's agents."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import msgspec
import nats
import pytest
from slot_world import ACME, Slots, endpoints_ready, reap_runs

from contracts.base import Ok
from contracts.slots import RunSlot
from natsbus import BusClient
from testkit.nats_server import start_nats_server

pytestmark = pytest.mark.integration

RUNS = 20


async def _stack(name: str, tmp_path: Path, service_process: Any) -> tuple[Any, Slots, Any]:
    server = start_nats_server(store_dir=tmp_path / f"nats-{name}")
    home = tmp_path / f"home-{name}"
    home.mkdir()
    await service_process("runtime_supervisor", env={
        "CLIPYARD_NATS_URL": server.url, "CLIPYARD_HOME": str(home), "CLIPYARD_SLOTS": str(RUNS),
    })  # fmt: skip
    await endpoints_ready(server.url)
    connection = await nats.connect(server.url)
    return server, Slots(BusClient(connection)), connection


async def _run(slots: Slots, run: str) -> RunSlot:
    grant = await slots.grant(run, trusted=False)
    reply = await slots.launch(grant, run, ["/bin/sh", "-c", "sleep 5; echo done"],
                               trusted=False, timeout_sec=60)  # fmt: skip
    assert isinstance(reply, Ok), reply
    return await slots.finished(run, timeout=60)


async def test_two_stacks_run_twenty_agents_each_at_once_and_none_kills_the_others(
    tmp_path: Path, service_process: Any
) -> None:
    stacks = [await _stack(name, tmp_path, service_process) for name in ("one", "two")]
    try:
        runs = [(slots, str(uuid.uuid4())) for _server, slots, _nc in stacks for _ in range(RUNS)]
        ended = await asyncio.gather(*(_run(slots, run) for slots, run in runs))
        outcomes = [(view.end, view.exit_code, view.signal) for view in ended]
        assert outcomes == [("exited", 0, None)] * (2 * RUNS), outcomes
        # Each stack ran its agents as its own company identity, and the two never met.
        uids = set()
        for _server, slots, _nc in stacks:
            health = await slots.health()
            assert isinstance(health, Ok), health
        for name in ("one", "two"):
            home = tmp_path / f"home-{name}"
            base = int((home / "id-range").read_text())
            table = msgspec.json.decode((home / "identities.json").read_bytes())
            uids.add(base + table[ACME])
        assert len(uids) == 2, uids
    finally:
        for server, _slots, connection in stacks:
            await connection.drain()
            server.stop()
        for name in ("one", "two"):
            reap_runs(tmp_path / f"home-{name}")
