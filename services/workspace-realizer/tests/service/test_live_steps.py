"""Long host steps shown while they run: a step begun is listed ``running`` with empty output
files at once and ended by the step that follows; the long operation it belongs to reports
``operation.progressed.v1`` as it begins and ends; and a step a crash left ``running`` is ended
``failed`` by its node's next start, never another node's."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from contracts.base import ErrorReply
from servicekit.operations import Operation, operation_to_contract
from workspace_realizer.adapters.contained_bus import BusCommandRunner
from workspace_realizer.adapters.ports import Step
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.orchestration.recovery import INTERRUPTED_STEP, fail_interrupted_steps
from workspace_realizer.orchestration.steps import StepRecorder


async def _direct(call: Any, *args: Any, **kwargs: Any) -> Any:
    return call(*args, **kwargs)


def _recorder(
    app: WorkspaceRealizerApplication, home: Path, node: str, operation_id: str | None
) -> StepRecorder:
    return StepRecorder(
        app,
        _direct,
        home,
        company_id="c1",
        workspace_id="w1",
        issue_id="i1",
        operation_id=operation_id,
        node_id=node,
    )


def _provision(status: str = "succeeded", code: int = 0) -> Step:
    now = datetime.now(UTC)
    return Step(
        phase="workspace_provision",
        command="make setup",
        cwd="/w",
        status=status,  # type: ignore[arg-type]
        exit_code=code,
        stdout=b"ready\n",
        started_at=now,
        finished_at=now,
    )


def _long_operation(app: WorkspaceRealizerApplication) -> str:
    operation = Operation(kind="realize", company_id="c1", subject_id="i1")
    app.save(operation)
    return str(operation.id)


def test_a_begun_step_is_running_with_empty_files_then_ended(
    app: WorkspaceRealizerApplication, home: Path
) -> None:
    operation_id = _long_operation(app)
    recorder = _recorder(app, home, "n1", operation_id)
    ref = asyncio.run(recorder.begin(phase="workspace_provision", command="make setup", cwd="/w"))
    begun = app.operations[ref]
    assert (begun.status, begun.finished_at, begun.node_id) == ("running", None, "n1")
    assert (home / "operations" / ref / "stdout").read_bytes() == b""
    assert app.operations_by_workspace["w1"] == [ref]

    asyncio.run(recorder(_provision()))
    ended = app.operations[ref]
    assert (ended.status, ended.exit_code, ended.stdout_excerpt) == ("succeeded", 0, "ready\n")
    assert ended.finished_at is not None
    assert (home / "operations" / ref / "stdout").read_bytes() == b"ready\n"
    assert recorder.ids == [ref]
    assert app.operations_by_workspace["w1"] == [ref]  # one row, not two

    stored = app.events.get(uuid.UUID(operation_id))
    events = [operation_to_contract(e, service="realizer") for e in stored]
    progressed = [e.progress for e in events if type(e).__name__ == "OperationProgressed"]
    assert [(p.phase, p.message, p.percent) for p in progressed] == [
        ("workspace_provision", "started", None),
        ("workspace_provision", "succeeded (exit code 0)", 100),
    ]
    assert {p.workspace_operation_id for p in progressed} == {ref}
    assert {p.execution_workspace_id for p in progressed} == {"w1"}


def test_a_step_not_begun_is_recorded_once_ended(
    app: WorkspaceRealizerApplication, home: Path
) -> None:
    recorder = _recorder(app, home, "n1", None)
    asyncio.run(recorder(_provision("failed", 2)))
    (ref,) = recorder.ids
    assert (app.operations[ref].status, app.operations[ref].exit_code) == ("failed", 2)


def test_a_restart_ends_only_its_own_nodes_running_steps(
    app: WorkspaceRealizerApplication, home: Path
) -> None:
    mine = asyncio.run(
        _recorder(app, home, "n1", None).begin(phase="workspace_provision", command="x", cwd="/w")
    )
    other = asyncio.run(
        _recorder(app, home, "n2", None).begin(phase="managed_clone", command="y", cwd="/w")
    )

    (home / "operations" / mine / "stdout").write_bytes(b"step 1\nstep 2\n")
    assert fail_interrupted_steps(app, "workspace-realizer", "n1") == [mine]
    # What it wrote before the crash stays readable and counted.
    assert (app.operations[mine].stdout_excerpt, app.operations[mine].stdout_bytes) == (
        "step 1\nstep 2\n",
        14,
    )
    assert (app.operations[mine].status, app.operations[mine].stderr_excerpt) == (
        "failed",
        INTERRUPTED_STEP,
    )
    assert app.operations[other].status == "running"
    assert fail_interrupted_steps(app, "workspace-realizer", "n1") == []


class _Bus:
    """A supervisor that raises, or answers with an error, while the command's output was being
    written to the step's files."""

    def __init__(self, home: Path, answer: Any) -> None:
        self.home, self.answer = home, answer

    async def request(self, subject: str, message: Any, **_: Any) -> Any:
        (self.home / "operations" / message.output_ref / "stdout").write_bytes(b"halfway\n")
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


def _run(recorder: StepRecorder, home: Path, answer: Any) -> Any:
    """Provision through a bus runner whose supervisor does as ``answer`` says."""
    runner = BusCommandRunner(_Bus(home, answer), "n1", {})  # type: ignore[arg-type]
    return asyncio.run(
        runner.run(
            phase="workspace_provision",
            command="make setup",
            cwd=home,
            env={},
            timeout=60,
            sink=recorder,
            company_id="c1",
        )
    )


def test_a_request_that_raises_ends_the_begun_step_failed(
    app: WorkspaceRealizerApplication, home: Path
) -> None:
    recorder = _recorder(app, home, "n1", _long_operation(app))
    with pytest.raises(ConnectionError):
        _run(recorder, home, ConnectionError("no route"))
    (ref,) = recorder.ids
    step = app.operations[ref]
    assert step.status == "failed"
    assert step.stdout_excerpt == "halfway\n"  # what it wrote before is kept
    assert "ConnectionError('no route')" in step.stderr_excerpt


def test_no_result_keeps_the_output_written_meanwhile(
    app: WorkspaceRealizerApplication, home: Path
) -> None:
    answer = ErrorReply(code="timeout", message="no answer in 90 s", status=504)
    recorder = _recorder(app, home, "n1", _long_operation(app))
    result = _run(recorder, home, answer)
    (ref,) = recorder.ids
    step = app.operations[ref]
    assert (result.exit_code, step.status) == (127, "failed")
    assert (home / "operations" / ref / "stdout").read_bytes() == b"halfway\n"
    assert "no result: the runtime-supervisor answered timeout" in step.stderr_excerpt
