"""The supervisor's workspace operations: recorded ``running`` when they begin, finished with
their exit code and the last 64 KiB of each stream, listed and read in the realizer's shapes, with
their full output in files read by byte range."""

from __future__ import annotations

from pathlib import Path

import pytest
from state_world import ACME, OTHER, World

from contracts.base import Actor
from eventstore import Cause, StoreExecutor, acting
from runtime_supervisor.adapters.outputs import finish_with_output, output_path, read_output
from runtime_supervisor.application import RuntimeSupervisorApplication
from runtime_supervisor.domain import InvalidInputError, NotFoundError, StateConflictError


def test_an_operation_begins_running_and_ends_with_its_excerpts(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    ws = world.workspace(None)
    target = world.target(ws=ws)
    cause = Cause(actor=Actor(type="agent", id="agent-1"), run_id="run-9", reason="start")
    with acting(cause):
        op = app.start_operation(target, phase="workspace_provision", command="serve web",
                                 cwd="/worktrees/ACME-1", operation_id="long-1",
                                 metadata={"workspaceCommandKind": "service"})  # fmt: skip
    row = app.list_operations(ACME, workspace_id=ws).items[0]
    assert (row.id, row.status, row.source, row.run_id, row.finished_at) == (
        op,
        "running",
        "supervisor",
        "run-9",
        None,
    )
    assert (row.operation_id, row.execution_workspace_id) == ("long-1", ws)
    world.clock.advance(2)
    stdout = b"a" * (70 * 1024) + b"END"
    detail = app.finish_operation(op, status="failed", exit_code=2, stdout=stdout,
                                  stderr=b"oops", metadata={"nested": 1})  # fmt: skip
    assert (detail.status, detail.exit_code, detail.finished_at) == ("failed", 2, world.clock.now)
    assert len(detail.stdout_excerpt) == 64 * 1024
    assert detail.stdout_excerpt.endswith("END")
    assert (detail.stderr_excerpt, detail.truncated) == ("oops", True)
    assert (detail.stdout_bytes, detail.stderr_bytes) == (len(stdout), 4)
    assert detail.metadata == {"workspaceCommandKind": "service", "nested": 1}
    assert app.operation_view(ACME, op) == detail
    with pytest.raises(StateConflictError):
        app.finish_operation(op, status="succeeded")
    with pytest.raises(NotFoundError):
        app.operation_view(OTHER, op)
    with pytest.raises(NotFoundError):
        app.finish_operation("0f6e2b3c-0000-4000-8000-000000000000", status="succeeded")


def test_a_short_output_is_not_truncated_unless_the_runner_cut_it(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    target = world.target(ws=world.workspace(None))
    op = app.start_operation(target, phase="workspace_provision", command="true", cwd="/")
    assert not app.finish_operation(op, status="succeeded", exit_code=0, stdout=b"ok").truncated
    capped = app.start_operation(target, phase="workspace_provision", command="yes", cwd="/")
    assert app.finish_operation(capped, status="failed", truncated=True).truncated


def test_operations_are_listed_per_target_oldest_first_in_pages(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    ws, other_ws = world.workspace(None), world.workspace(None)
    pw = world.project_workspace()
    target = world.target(ws=ws)
    ids = [app.start_operation(target, phase="workspace_provision", command=f"job {i}", cwd="/")
           for i in range(5)]  # fmt: skip
    app.start_operation(world.target(ws=other_ws), phase="workspace_teardown", command="x", cwd="/")
    pw_op = app.start_operation(world.target(pw=pw), phase="workspace_provision", command="y",
                                cwd="/repos/acme")  # fmt: skip
    page = app.list_operations(ACME, workspace_id=ws, limit=2, offset=1)
    assert ([r.id for r in page.items], page.total) == (ids[1:3], 5)
    assert [r.id for r in app.list_operations(ACME, project_workspace_id=pw).items] == [pw_op]
    # A workspace the supervisor never heard of has no operations here; another company's is
    # not found.
    assert app.list_operations(ACME, workspace_id="unknown").total == 0
    with pytest.raises(NotFoundError):
        app.list_operations(OTHER, workspace_id=ws)
    with pytest.raises(InvalidInputError):
        app.list_operations(ACME)


async def test_the_full_output_is_written_then_read_by_byte_range(
    app: RuntimeSupervisorApplication, world: World, tmp_path: Path
) -> None:
    target = world.target(ws=world.workspace(None))
    executor = StoreExecutor("test-store")
    try:
        op = await executor.run(
            app.start_operation, target, phase="workspace_provision", command="job", cwd="/"
        )
        stdout = bytes(range(256)) * 1200  # 300 KiB
        detail = await finish_with_output(app, executor.run, tmp_path, op, status="succeeded",
                                          exit_code=0, stdout=stdout, stderr=b"warn\n")  # fmt: skip
    finally:
        executor.close()
    assert detail.status == "succeeded"
    assert app.operations[op].log_dir == str(tmp_path / "operations" / op)
    assert output_path(tmp_path, op, "stdout").read_bytes() == stdout
    data, total = read_output(tmp_path, op, "stdout", 1000, 50)
    assert (data, total) == (stdout[1000:1050], len(stdout))
    data, total = read_output(tmp_path, op, "stdout", 0, 10**9)
    assert (len(data), total) == (256 * 1024, len(stdout))  # one range is at most 256 KiB
    assert read_output(tmp_path, op, "stderr", 0, 100) == (b"warn\n", 5)
    assert read_output(tmp_path, "gone", "stdout", 0, 100) == (b"", 0)
    with pytest.raises(ValueError, match="stdout or stderr"):
        read_output(tmp_path, op, "../../etc/passwd", 0, 100)


def test_a_targets_history_is_its_runtime_services_and_operations(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    target, other = world.target(ws=world.workspace(None)), world.target(ws=world.workspace(None))
    assert app.event_sources(target) == []
    app.record_desired(target, "running", {"0": "running"})
    web = world.start(target)
    op = app.start_operation(target, phase="workspace_provision", command="serve web", cwd="/")
    world.start(other, "db")
    sources = app.event_sources(target)
    assert sources == [app.runtimes[target.key].id, app.services[web].id, app.operations[op].id]
    assert [type(e).__qualname__ for e in app.events.get(sources[1])] == [
        "RuntimeService.StartBegan",
        "RuntimeService.Started",
    ]
