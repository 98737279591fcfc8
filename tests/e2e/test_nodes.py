"""The worker-node registry through HTTP and the CLI (issue 18, item 1), on the single-node stack:
its one node is registered by its supervisor at start and listed ``ready``, with both of its
processes answering and what the host can hold; only the admin key may list nodes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from clipyard_cli.nodes import run_nodes

pytestmark = pytest.mark.e2e


async def test_the_stacks_node_is_listed_ready_with_its_parts_and_capacity(
    stack: Any, nats_server: Any, clipyard_home: Path
) -> None:
    async with stack.admin as admin:
        answer = await admin.get("/api/nodes")
        assert answer.status_code == 200, answer.text
        (node,) = answer.json()
        company = (await admin.post("/api/companies", json={"name": "Nodes"})).json()
        key = await admin.post(
            f"/api/companies/{company['id']}/api-keys", json={"name": "b", "kind": "board"}
        )
    assert node["id"] == "local"
    assert node["state"] == "ready"
    assert node["parts"] == ["supervisor", "realizer"]
    assert node["instance"]
    assert node["startedAt"] <= node["lastSeenAt"]
    capacity = node["capacity"]
    assert capacity["slots"] >= 1
    assert capacity["cpus"] >= 1
    assert capacity["diskFreeBytes"] > 0
    assert capacity["memoryBytes"] > 0
    assert capacity["portRange"].count("-") == 1
    # A board key may not list the hosts.
    async with stack.client(key.json()["key"]) as board:
        refused = await board.get("/api/nodes")
    assert refused.status_code == 403, refused.text
    assert "admin" in refused.json()["error"]

    env = {
        "CLIPYARD_HOME": str(clipyard_home),
        "CLIPYARD_NATS_URL": nats_server.url,
        "CLIPYARD_NATS_EXTERNAL": "1",
    }
    out = io.StringIO()
    assert await run_nodes(env, out) == 0, out.getvalue()
    header, row = out.getvalue().splitlines()
    assert header.split()[:4] == ["NODE", "STATE", "PARTS", "SUPERVISOR"]
    assert row.split()[:3] == ["local", "ready", "supervisor,realizer"]
    out = io.StringIO()
    assert await run_nodes(env, out, as_json=True) == 0
    assert [n["id"] for n in json.loads(out.getvalue())] == ["local"]
