"""A supervisor never acts on another node's workspace (docs/scale-out.md, "Worker nodes"): a
control of it is sent on to that node's supervisor, whose answer comes back as it is; with no
supervisor there, it is 503 ``node_unreachable`` naming the node, and nothing is recorded here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bus_world import BOARD, Sup, Upstream, http_service, runtime

from contracts.base import Ok
from contracts.execution_commands import ListWorkspaceOperations
from contracts.execution_views import WorkspaceOperation
from contracts.runtime_commands import ControlRuntime
from contracts.workspace_subjects import workspace_operations
from contracts.workspace_views import Page
from natsbus.codec import decode, encode
from servicekit.node_routing import FORWARDED_HEADER

pytestmark = pytest.mark.integration


def sleeper(name: str) -> Any:
    return http_service(name, command="exec sleep 300", port=None, readiness=None)


async def test_a_control_of_another_nodes_workspace_is_done_there_or_not_at_all(
    start_supervisor: Any, upstream: Upstream, sup: Sup, nc: Any, tmp_path: Path
) -> None:
    await start_supervisor()
    (tmp_path / "repo").mkdir()
    (tmp_path / "ws").mkdir()
    pw = await upstream.project_workspace(str(tmp_path / "repo"), runtime(sleeper("web")))
    upstream.node = "nodeb"
    ws = await upstream.workspace(str(tmp_path / "ws"), pw=pw)
    await sup.known(ws)

    # Nothing serves node b: refused, naming it; nothing started or recorded on this node.
    refused = await sup.error("start", ws)
    assert (refused.code, refused.status) == ("node_unreachable", 503)
    assert refused.details == {"nodeId": "nodeb"}
    rows = await sup.bus.call(
        workspace_operations("supervisor"),
        ListWorkspaceOperations(principal=BOARD, workspace_id=ws),
        Page[WorkspaceOperation],
    )
    assert rows.items == []

    # Node b's supervisor (here a stand-in) gets the very request, marked as sent on by the
    # node, and its answer is the answer.
    seen: list[Any] = []

    async def node_b(msg: Any) -> None:
        seen.append((decode(msg.data, ControlRuntime), dict(msg.headers or {})))
        await msg.respond(encode(Ok(result={"answeredBy": "nodeb"})))

    subscription = await nc.subscribe("ws.cmd.runtime_service.control.nodeb", cb=node_b)
    try:
        reply = await sup.control("start", ws, workspace_command_id="service:web")
    finally:
        await subscription.unsubscribe()
    assert reply == Ok(result={"answeredBy": "nodeb"})
    ((command, headers),) = seen
    assert (command.workspace_id, command.action) == (ws, "start")
    assert command.workspace_command_id == "service:web"
    assert headers[FORWARDED_HEADER] == "local"
