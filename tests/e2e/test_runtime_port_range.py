"""Reference case 55 through HTTP: the stack's supervisor may allocate only a tiny port range
(``CLIPYARD_PORT_RANGE``), every port of which this test holds itself, so an auto-port start
answers 409 ``workspace_runtime_port_allocation_exhausted`` with a message saying what to do, and
starts nothing; once one port is let go, the start gets exactly that one."""

from __future__ import annotations

import random
import socket
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.hostfacts import find_server_pid, port_free
from tests.e2e.runtimeutil import http_service, rows_of, runtime_board, status_of

pytestmark = pytest.mark.e2e

WIDTH = 3
WEB = "service:web"


def _hold(port: int, stack: ExitStack) -> socket.socket | None:
    """A listener of ours on 127.0.0.1:``port``, or None when the port is taken."""
    sock = stack.enter_context(socket.socket())
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(1)
    except OSError:
        return None
    return sock


@pytest.fixture
def held_ports() -> Iterator[dict[int, socket.socket]]:
    """``WIDTH`` consecutive ports, each held by a listener of this test (outside the kernel's
    ephemeral range and the default 41000-41999, so no other test is handed one meanwhile)."""
    for _ in range(100):
        low = random.randrange(20000, 32000 - WIDTH)
        with ExitStack() as stack:
            held = {port: _hold(port, stack) for port in range(low, low + WIDTH)}
            if all(held.values()):
                yield {port: sock for port, sock in held.items() if sock is not None}
                return
    raise AssertionError(f"found no {WIDTH} consecutive free ports in 20000-32000")


@pytest.fixture
def stack_env(held_ports: dict[int, socket.socket]) -> dict[str, str]:
    return {"CLIPYARD_PORT_RANGE": f"{min(held_ports)}-{max(held_ports)}"}


async def test_a_start_with_every_port_of_the_range_taken_is_409_exhausted(
    stack: Any, tmp_path: Path, reaper: None, held_ports: dict[int, socket.socket]
) -> None:
    low, high = min(held_ports), max(held_ports)
    async with runtime_board(stack, tmp_path) as board:
        _, ws = await board.realize("No room")
        await board.set_runtime(ws["id"], {"services": [http_service("web")]})
        refused = await board.control(ws["id"], "start", workspaceCommandId=WEB)
        assert refused.status_code == 409, status_of(refused)
        error = refused.json()
        assert error["code"] == "workspace_runtime_port_allocation_exhausted", error
        message = error["error"]
        # It names the range and says what to do (reference §6.2 step 3).
        assert f"{low}-{high}" in message, message
        assert "retry the start" in message.lower(), message
        assert "configure" in message.lower(), message
        # Nothing was started, and the ports are still ours alone.
        detail = (await board.detail(ws["id"])).json()
        live = [r for r in detail["runtimeServices"] if r["status"] in ("starting", "running")]
        assert live == [], live
        assert all(not port_free(port) for port in held_ports)

        # One port let go: the next start gets exactly that port of the range.
        freed = low + 1
        held_ports.pop(freed).close()
        started = await board.control(ws["id"], "start", workspaceCommandId=WEB)
        assert started.status_code == 200, status_of(started)
        (row,) = [r for r in rows_of(started.json()["workspace"], WEB) if r["status"] == "running"]
        assert row["port"] == freed, row
        server = find_server_pid(freed)
        async with httpx.AsyncClient(timeout=5) as http:
            assert (await http.get(row["url"])).status_code == 200
        stopped = await board.control(ws["id"], "stop", workspaceCommandId=WEB)
        assert stopped.status_code == 200, status_of(stopped)
        assert port_free(freed), f"port {freed} still held after the stop (server pid {server})"
