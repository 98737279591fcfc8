"""Jobs and lazy runtime provisioning over the bus, and the supervisor's workspace operations and
events as the gateway reads them: a job runs once as a ``Workspace job`` operation with its exit
code, output over 256 KiB is capped and marked truncated; the runtime provision command runs once
before the first start (two starts, one provision operation, ``provisioned``), and a failing one
fails the start naming its operation (DECISIONS 1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from bus_world import BOARD, Sup, Upstream, eventually, http_service, runtime

from contracts.base import Accepted, ErrorReply, Ok
from contracts.execution_commands import (
    GetWorkspaceEvents,
    GetWorkspaceOperation,
    GetWorkspaceOperationOutput,
    ListWorkspaceOperations,
)
from contracts.execution_views import (
    WorkspaceEventRow,
    WorkspaceOperation,
    WorkspaceOperationDetail,
    WorkspaceOperationOutput,
)
from contracts.runtime_commands import ControlRuntime
from contracts.runtime_subjects import runtime_control
from contracts.workspace_config import ExecutionWorkspaceConfig, JobSpec
from contracts.workspace_subjects import (
    workspace_events,
    workspace_operation,
    workspace_operation_output,
    workspace_operations,
)
from contracts.workspace_views import Page

pytestmark = pytest.mark.integration

CAP = 256 * 1024
SLEEPER = http_service("web", command="exec sleep 300", port=None, readiness=None)


async def test_a_job_runs_once_with_its_exit_code_and_capped_output(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    jobs = [
        JobSpec(name="big", command="head -c 400000 /dev/zero | tr '\\0' x; echo oops >&2"),
        JobSpec(name="migrate", command="echo migrating in $(pwd); exit 2", cwd="db"),
    ]
    (workdir / "db").mkdir()
    pw = await upstream.project_workspace(str(workdir), runtime(jobs=jobs))
    ws = await upstream.workspace(str(workdir), pw=pw)
    await sup.known(ws)

    big = await sup.ok_control("run", ws, workspace_command_id="job:big")
    failed = await sup.ok_control("run", ws, workspace_command_id="job:migrate")

    op = big["operation"]
    assert (op["status"], op["exitCode"], op["phase"]) == ("succeeded", 0, "workspace_provision")
    assert op["metadata"]["label"] == 'Workspace job "big"'
    assert op["metadata"]["workspaceCommandKind"] == "job"
    assert op["metadata"]["stdoutTotalBytes"] == 400000
    detail = await sup.bus.call(
        workspace_operation("supervisor"),
        GetWorkspaceOperation(principal=BOARD, operation_id=op["id"]),
        WorkspaceOperationDetail,
    )
    assert detail.truncated is True
    assert detail.stdout_bytes == CAP
    assert detail.stderr_excerpt == "oops\n"
    output = await sup.bus.call(
        workspace_operation_output("supervisor"),
        GetWorkspaceOperationOutput(principal=BOARD, operation_id=op["id"], offset=CAP - 10),
        WorkspaceOperationOutput,
    )
    assert (output.total_bytes, output.data) == (CAP, b"x" * 10)
    migrate = failed["operation"]
    assert (migrate["status"], migrate["exitCode"]) == ("failed", 2)
    assert migrate["cwd"] == str(workdir / "db")
    detail = await sup.bus.call(
        workspace_operation("supervisor"),
        GetWorkspaceOperation(principal=BOARD, operation_id=migrate["id"]),
        WorkspaceOperationDetail,
    )
    assert detail.stdout_excerpt == f"migrating in {workdir / 'db'}\n"
    assert detail.truncated is False
    # Both are the workspace's operations, oldest first, as the gateway merges them.
    page = await sup.bus.call(
        workspace_operations("supervisor"),
        ListWorkspaceOperations(principal=BOARD, workspace_id=ws),
        Page[WorkspaceOperation],
    )
    assert [o.id for o in page.items] == [op["id"], migrate["id"]]
    assert {o.source for o in page.items} == {"supervisor"}
    other = BOARD.__class__(company_id="c-other", actor=BOARD.actor)
    hidden = await sup.bus.request(
        workspace_operation("supervisor"),
        GetWorkspaceOperation(principal=other, operation_id=op["id"]),
    )
    assert isinstance(hidden, ErrorReply)
    assert hidden.status == 404


async def test_runtime_provisioning_runs_once_before_the_first_start(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    config = ExecutionWorkspaceConfig(
        runtime_provision_command="echo provisioned >> provisions.log",
        workspace_runtime=runtime(SLEEPER, http_service("api", command="exec sleep 300",
                                                        port=None, readiness=None)),
    )  # fmt: skip
    ws = await upstream.workspace(str(workdir), config=config)
    state = await sup.known(ws)
    assert state.runtime_provisioning.state == "deferred"

    await sup.ok_control("start", ws)  # two services start together: one provisioning
    await sup.ok_control("restart", ws, workspace_command_id="service:web")

    assert (workdir / "provisions.log").read_text() == "provisioned\n"
    state = await sup.state(ws)
    assert state.runtime_provisioning.state == "provisioned"
    page = await sup.bus.call(
        workspace_operations("supervisor"),
        ListWorkspaceOperations(principal=BOARD, workspace_id=ws),
        Page[WorkspaceOperation],
    )
    provisions = [o for o in page.items if o.metadata.get("workspaceCommandKind") ==
                  "runtime_provision"]  # fmt: skip
    assert len(provisions) == 1
    assert provisions[0].id == state.runtime_provisioning.operation_id
    assert provisions[0].command == "echo provisioned >> provisions.log"
    # Its events are in the workspace's audit trail, with the services' own.
    events = await sup.bus.call(
        workspace_events("supervisor"),
        GetWorkspaceEvents(principal=BOARD, workspace_id=ws, limit=200),
        Page[WorkspaceEventRow],
    )
    types = [e.type for e in events.items]
    assert "runtime_provisioning.succeeded.v1" in types
    assert types.count("runtime_service.started.v1") == 3
    assert {e.source for e in events.items} == {"supervisor"}
    assert [e.occurred_at for e in events.items] == sorted(e.occurred_at for e in events.items)


async def test_a_failing_provision_command_fails_the_start_naming_its_operation(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    config = ExecutionWorkspaceConfig(
        runtime_provision_command="echo 'npm ERR! missing lockfile' >&2; exit 1",
        workspace_runtime=runtime(SLEEPER),
    )
    ws = await upstream.workspace(str(workdir), config=config)
    await sup.known(ws)

    reply = await sup.control("start", ws)

    assert isinstance(reply, ErrorReply), reply
    assert reply.code == "runtime_provisioning_failed"
    operation_id = reply.details["operationId"]
    assert operation_id in reply.message
    state = await sup.state(ws)
    assert (state.runtime_provisioning.state, state.runtime_provisioning.operation_id) == (
        "failed",
        operation_id,
    )
    assert state.runtime_services == []
    detail = await sup.bus.call(
        workspace_operation("supervisor"),
        GetWorkspaceOperation(principal=BOARD, operation_id=operation_id),
        WorkspaceOperationDetail,
    )
    assert (detail.status, detail.exit_code) == ("failed", 1)
    assert "npm ERR! missing lockfile" in detail.stderr_excerpt


async def test_a_job_cut_short_by_a_supervisor_crash_is_recorded_failed_at_the_next_start(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    supervisor = await start_supervisor()
    pw = await upstream.project_workspace(
        str(workdir), runtime(jobs=[JobSpec(name="long", command="sleep 10")])
    )
    ws = await upstream.workspace(str(workdir), pw=pw)
    await sup.known(ws)
    command = ControlRuntime(
        principal=BOARD, workspace_id=ws, action="run", workspace_command_id="job:long"
    )
    # The job outlasts the request: accepted 0.5 s before the 3 s deadline, still running.
    accepted = await sup.bus.request(runtime_control("local"), command, timeout=3)
    assert isinstance(accepted, Accepted), accepted

    supervisor.kill()
    await supervisor.start()

    async def recorded() -> list[WorkspaceOperation] | None:
        reply = await sup.bus.request(
            workspace_operations("supervisor"),
            ListWorkspaceOperations(principal=BOARD, workspace_id=ws),
        )
        if not isinstance(reply, Ok):
            return None
        return msgspec.convert(reply.result, Page[WorkspaceOperation]).items or None

    (operation,) = await eventually(recorded, what="the supervisor answering again")
    assert operation.status == "failed"
    detail = await sup.bus.call(
        workspace_operation("supervisor"),
        GetWorkspaceOperation(principal=BOARD, operation_id=operation.id),
        WorkspaceOperationDetail,
    )
    assert detail.stderr_excerpt == "the supervisor stopped before this step ended\n"
