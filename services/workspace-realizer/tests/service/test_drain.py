"""Draining a node with fake host ports (docs/scale-out.md, "Draining a node"): two realizers on
one store, ``nodeb`` drained into ``local``. What moves, what waits, what stays when a push is
refused (its services started again where they were), and what the receiving node refuses."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from contracts.base import Actor, Principal
from contracts.drains import MoveIn, MoveInResult, MoveInWorkspaces
from contracts.nodes import NodeCapacity, NodeView
from workspace_realizer.adapters.host import HostPorts
from workspace_realizer.adapters.ports import HostOperationError
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.domain.errors import InvalidInputError
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.drain import Drainer
from workspace_realizer.orchestration.move_in import check_move_in, move_in
from workspace_realizer.orchestration.realize import RealizeRequest, realize

ISOLATED = {"enabled": True, "defaultMode": "isolated_workspace", "allowIssueOverride": True,
            "workspaceStrategy": {"type": "git_worktree"}}  # fmt: skip
URL = "https://example.com/acme/web.git"
WEB = "service:web"


def _node(node: str, workspaces: int = 0) -> NodeView:
    capacity = NodeCapacity(slots=1, port_range="1-2", disk_free_bytes=1, cpus=1, memory_bytes=1)
    return NodeView(id=node, state="ready", instance=f"sup-{node}", version="1",
                    started_at=datetime.now(UTC), last_seen_at=None, capacity=capacity,
                    parts=["supervisor", "realizer"], workspaces=workspaces)  # fmt: skip


class Moves:
    """The rest of Clipyard by hand: the registry, the supervisors, and the receiving node's
    host part (called in process)."""

    def __init__(self) -> None:
        self.realizers: dict[str, Realizer] = {}
        self.running: dict[str, list[str]] = {}
        self.started: list[tuple[str, str, list[str]]] = []
        self.draining: list[str] = []

    async def nodes(self) -> list[NodeView]:
        return [_node(node) for node in sorted(self.realizers)]

    async def mark_draining(self, node: str, reason: str | None) -> None:
        self.draining.append(node)

    async def stop_services(self, company_id: str, workspace_id: str, generation: int,
                            reason: str) -> list[str]:  # fmt: skip
        return self.running.pop(workspace_id, [])

    async def start_services(self, company_id: str, workspace_id: str, commands: list[str],
                             node: str) -> tuple[list[str], list[str]]:  # fmt: skip
        self.started.append((workspace_id, node, list(commands)))
        return list(commands), []

    async def move_in(self, node: str, command: MoveInWorkspaces) -> MoveInResult:
        return await move_in(self.realizers[node], command)


@pytest.fixture
def moves() -> Moves:
    return Moves()


@pytest.fixture
def nodes(realizer: Realizer, moves: Moves, tmp_path: Path) -> dict[str, Realizer]:
    """``local`` (the fixture's realizer) and ``nodeb`` (its own home), sharing the store."""
    realizer.moves = moves
    other = Realizer(app=realizer.app, store=realizer.store, ports=realizer.ports,
                     home=tmp_path / "home-b", stop_services=realizer.stop_services,
                     node_id="nodeb", moves=moves)  # fmt: skip
    moves.realizers = {"local": realizer, "nodeb": other}
    return moves.realizers


async def _on_b(
    world: Any, app: WorkspaceRealizerApplication, b: Realizer, n: int
) -> dict[str, Any]:
    board = world.company()
    project = world.project(board, ISOLATED)
    pw = str(app.create_project_workspace(
        board, project, {"name": "main", "cwd": None, "repo_url": URL}, None, node_id="nodeb"
    ).id)  # fmt: skip
    workspaces = []
    for k in range(n):
        issue = world.issue(board, project, title=f"Work {k}", status="in_progress")
        done = await realize(b, board, RealizeRequest(issue), f"op-{k}")
        workspaces.append(done.workspace_id)
    return {"board": board, "pw": pw, "workspaces": workspaces}


async def test_idle_worktrees_move_with_their_files_and_services_and_leave_node_b(
    nodes: dict[str, Realizer], moves: Moves, world: Any, app: WorkspaceRealizerApplication,
    git: Any,
) -> None:  # fmt: skip
    b = nodes["nodeb"]
    seeded = await _on_b(world, app, b, 2)
    first, second = seeded["workspaces"]
    old = {w: app.workspaces[w].cwd for w in (first, second)}
    git.trees[old[first]].untracked = 2
    moves.running[first] = [WEB]

    report = await Drainer(b).drain("maintenance")

    assert moves.draining == ["nodeb"]
    assert report.remaining == 0, report
    assert report.project_workspaces_moved == [seeded["pw"]]
    assert {m.workspace_id for m in report.moved} == {first, second}
    assert app.project_workspaces[seeded["pw"]].node_id == "local"
    for ws_id in (first, second):
        ws = app.workspaces[ws_id]
        assert ws.node_id == "local"
        assert ws.cwd is not None
        assert Path(ws.cwd).is_relative_to(nodes["local"].home)
        assert Path(ws.cwd).name == Path(old[ws_id] or "").name
        assert not Path(old[ws_id] or "").exists()  # removed from node B
    moved = next(m for m in report.moved if m.workspace_id == first)
    assert (moved.file_count, moved.services_restarted) == (2, [WEB])
    # Stopped on B, started on A; the work was pushed, fetched, then dropped from the remote.
    assert moves.started == [(first, "local", [WEB])]
    assert git.pushed == {}
    assert {"push_ref", "fetch_ref", "drop_pushed_refs"} <= set(git.names())


async def test_a_refused_push_moves_nothing_and_starts_the_services_again_where_they_were(
    nodes: dict[str, Realizer], moves: Moves, world: Any, app: WorkspaceRealizerApplication,
    git: Any,
) -> None:  # fmt: skip
    b = nodes["nodeb"]
    seeded = await _on_b(world, app, b, 2)
    first = min(seeded["workspaces"])  # carried first (by id): its push is refused
    moves.running[first] = [WEB]
    git.fail["push_ref"] = HostOperationError("remote: permission denied")

    report = await Drainer(b).run_pass()

    assert report.moved == []
    assert report.project_workspaces_moved == []
    reasons = {u.workspace_id: u.reason for u in report.not_moved}
    (second,) = set(seeded["workspaces"]) - {first}
    assert reasons == {first: "push_refused", second: "move_failed"}
    refused = next(u for u in report.not_moved if u.workspace_id == first)
    assert "permission denied" in refused.message
    assert app.project_workspaces[seeded["pw"]].node_id == "nodeb"
    assert all(app.workspaces[w].node_id == "nodeb" for w in seeded["workspaces"])
    assert all(Path(app.workspaces[w].cwd or "").is_dir() for w in seeded["workspaces"])
    assert moves.started == [(first, "nodeb", [WEB])]
    assert report.remaining == 3


async def test_a_workspace_a_run_holds_waits_and_its_project_workspace_stays(
    nodes: dict[str, Realizer], world: Any, app: WorkspaceRealizerApplication,
    executor: Any,
) -> None:  # fmt: skip
    b = nodes["nodeb"]
    seeded = await _on_b(world, app, b, 1)
    (held,) = seeded["workspaces"]

    def hold() -> None:
        ws = app.load(held)
        ws.hold_for_run("run-1", datetime.now(UTC))
        app.save(ws)

    await executor.run(hold)

    report = await Drainer(b).run_pass()

    assert [(w.workspace_id, w.run_ids) for w in report.waiting] == [(held, ["run-1"])]
    assert report.moved == []
    assert report.remaining == 2
    assert app.workspaces[held].node_id == "nodeb"


async def test_the_receiving_node_refuses_a_path_outside_its_home_and_a_foreign_ref(
    nodes: dict[str, Realizer], world: Any, app: WorkspaceRealizerApplication
) -> None:
    b, a = nodes["nodeb"], nodes["local"]
    seeded = await _on_b(world, app, b, 1)
    (ws,) = seeded["workspaces"]
    app.move_project_workspace(seeded["pw"], "local", "test")
    principal = Principal(company_id="c-acme", actor=Actor(type="system", id="workspace-realizer"))

    def command(**fields: Any) -> MoveInWorkspaces:
        move = {"workspace_id": ws, "rescue_ref": None, "rescue_sha": None,
                "home_relative": "worktrees/x"} | fields  # fmt: skip
        return MoveInWorkspaces(principal=principal, project_workspace_id=seeded["pw"],
                                from_node="nodeb", workspaces=[MoveIn(**move)])  # fmt: skip

    check_move_in(a, command())  # what a drain sends
    for bad in ({"home_relative": "../../etc"}, {"home_relative": "/etc"},
                {"rescue_ref": "refs/clipyard/moves/00000000-0000-4000-8000-000000000000"}):  # fmt: skip
        with pytest.raises(InvalidInputError):
            check_move_in(a, command(**bad))
    with pytest.raises(InvalidInputError):  # a node the project workspace is not on
        check_move_in(b, command())
    other = Principal(company_id="c-other", actor=principal.actor)
    with pytest.raises(InvalidInputError):
        check_move_in(a, MoveInWorkspaces(principal=other, project_workspace_id=seeded["pw"],
                                          from_node="nodeb", workspaces=[]))  # fmt: skip
    assert isinstance(a.ports, HostPorts)
