"""``clipyard nodes`` without a supervisor to answer: a clear line and exit code 1, no traceback;
and the table's columns for a node."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from clipyard_cli.nodes import format_nodes, run_nodes
from contracts.nodes import NodeCapacity, NodeView


@pytest.mark.integration
async def test_no_supervisor_is_said_plainly(
    nats_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {
        "CLIPYARD_HOME": str(tmp_path),
        "CLIPYARD_NATS_URL": nats_server.url,
        "CLIPYARD_NATS_EXTERNAL": "1",
    }
    out = io.StringIO()
    assert await run_nodes(env, out) == 1
    assert out.getvalue() == ""
    assert "gave no node list" in capsys.readouterr().err


def test_a_node_row_shows_state_parts_supervisor_and_capacity() -> None:
    now = datetime.now(UTC)
    node = NodeView(
        id="nodeb", state="unreachable", instance="sup-b", version="1.0", started_at=now,
        last_seen_at=now - timedelta(seconds=20), parts=[],
        capacity=NodeCapacity(slots=4, port_range="41000-41999", disk_free_bytes=2**31, cpus=2,
                              memory_bytes=2**32),
    )  # fmt: skip
    _header, row = format_nodes([node], now).splitlines()
    assert row.split()[:5] == ["nodeb", "unreachable", "none", "answers", "sup-b"]
    assert "20 s" in row
    assert "4 slots, ports 41000-41999, 2 cpus, 4.0 GiB memory, 2.0 GiB disk free" in row
    assert format_nodes([], now).startswith("no worker node has registered")
