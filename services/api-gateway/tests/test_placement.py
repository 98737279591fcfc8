"""The placement rule of a new project workspace over the registered worker nodes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from api_gateway.controllers.placement import choose_node
from api_gateway.domain import InvalidInputError, NotFoundError
from api_gateway.http.errors import BusReplyError
from contracts.nodes import NodeCapacity, NodeView

CAPACITY = NodeCapacity(
    slots=4, port_range="41000-41999", disk_free_bytes=1, cpus=2, memory_bytes=1
)


def node(name: str, state: str = "ready", workspaces: int = 0) -> NodeView:
    return NodeView(
        id=name,
        state=state,  # type: ignore[arg-type]
        instance=f"runtime-supervisor-{name}",
        version="0",
        started_at=datetime.now(UTC),
        last_seen_at=None,
        capacity=CAPACITY,
        parts=["supervisor", "realizer"],
        workspaces=workspaces,
    )


def test_the_only_ready_node_takes_it_whether_cwd_or_repo() -> None:
    nodes = [node("a"), node("b", "unreachable")]
    assert choose_node(nodes, None, has_cwd=True, default="gw") == "a"
    assert choose_node(nodes, None, has_cwd=False, default="gw") == "a"


def test_no_registered_node_is_the_gateways_own() -> None:
    assert choose_node([], None, has_cwd=True, default="gw") == "gw"


def test_a_cwd_with_several_ready_nodes_is_refused_naming_them() -> None:
    with pytest.raises(InvalidInputError) as refused:
        choose_node([node("a"), node("b")], None, has_cwd=True, default="a")
    assert (refused.value.code, refused.value.status) == ("unprocessable", 422)
    assert "a, b" in str(refused.value)
    assert "nodeId" in str(refused.value)


def test_a_repo_only_workspace_goes_to_the_least_loaded_ready_node() -> None:
    nodes = [node("a", workspaces=3), node("b", workspaces=1), node("c", "unreachable")]
    assert choose_node(nodes, None, has_cwd=False, default="a") == "b"
    even = [node("b", workspaces=2), node("a", workspaces=2)]
    assert choose_node(even, None, has_cwd=False, default="b") == "a"


def test_a_named_node_is_kept_when_ready_and_refused_otherwise() -> None:
    nodes = [node("a"), node("b", "unreachable")]
    assert choose_node(nodes, "a", has_cwd=True, default="gw") == "a"
    with pytest.raises(BusReplyError) as down:
        choose_node(nodes, "b", has_cwd=True, default="gw")
    assert down.value.reply.code == "node_unreachable"
    assert down.value.reply.details == {"nodeId": "b"}
    with pytest.raises(NotFoundError) as unknown:
        choose_node(nodes, "zz", has_cwd=False, default="gw")
    assert (unknown.value.status, unknown.value.details) == (404, {"nodeId": "zz"})
    assert "'zz'" in str(unknown.value)
    assert "a, b" in str(unknown.value)


def test_no_ready_node_answers_node_unreachable() -> None:
    with pytest.raises(BusReplyError) as down:
        choose_node([node("a", "unreachable"), node("b", "unreachable")], None, False, "a")
    assert down.value.reply.code == "node_unreachable"
    assert down.value.reply.status == 503
