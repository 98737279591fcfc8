"""The pure scheduling rule: queue order, each agent under its limit, one run per workspace and
no overtaking on a workspace."""

from __future__ import annotations

from heartbeat_controller.domain.scheduling import Candidate, runnable


def _ids(chosen: list[Candidate]) -> list[str]:
    return [c.run_id for c in chosen]


def test_runs_start_in_queue_order_up_to_each_agents_limit() -> None:
    queued = [Candidate("r1", "a", None), Candidate("r2", "a", None), Candidate("r3", "b", None)]
    assert _ids(runnable(queued, {}, {"a": 1, "b": 1}, set())) == ["r1", "r3"]
    assert _ids(runnable(queued, {"a": 1}, {"a": 2, "b": 1}, set())) == ["r1", "r3"]
    assert _ids(runnable(queued, {"a": 2}, {"a": 2, "b": 1}, set())) == ["r3"]


def test_an_agent_that_is_gone_runs_nothing() -> None:
    assert runnable([Candidate("r1", "gone", None)], {}, {}, set()) == []


def test_one_run_per_workspace_and_no_overtaking() -> None:
    queued = [
        Candidate("r1", "a", "ws"),
        Candidate("r2", "b", "ws"),
        Candidate("r3", "b", "other"),
    ]
    assert _ids(runnable(queued, {}, {"a": 5, "b": 5}, set())) == ["r1", "r3"]
    # A busy workspace (held, or awaited by a running run) starts nobody on it.
    assert _ids(runnable(queued, {}, {"a": 5, "b": 5}, {"ws"})) == ["r3"]
    # An earlier run held back by its agent's limit still keeps its place on the workspace.
    assert _ids(runnable(queued, {"a": 1}, {"a": 1, "b": 5}, set())) == ["r3"]
