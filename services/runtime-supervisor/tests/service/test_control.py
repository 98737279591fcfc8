"""``ControlRuntime`` over the bus with real principals: the runtime-control lease between agents
(case 63: issue A's run holds it, issue B's agent gets 409, once issue A is done B reclaims it;
board actors bypass it), agents need a run holding the workspace (a run the copies have not heard
of yet is waited for; a known contradiction is refused at once), the admin key controls nothing,
kinds that do not fit the action (case 64), a workspace without a path, another company's
workspace, and a long start answering ``accepted`` with its ``starting`` record visible before
readiness."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import msgspec
import pytest
from bus_world import BOARD, OPERATOR, Sup, Upstream, agent, eventually, http_service, runtime

from contracts.base import Accepted, Actor, ErrorReply, Ok, Principal
from contracts.runtime_commands import ControlRuntime, RuntimeControlResult
from contracts.runtime_subjects import runtime_control
from contracts.service import GetOperation, OperationView
from contracts.subjects import service_query
from contracts.workspace_config import JobSpec
from runtime_supervisor.orchestration.freshness import OWN_WAIT

pytestmark = pytest.mark.integration

SLEEPER = http_service("web", command="exec sleep 300", port=None, readiness=None)


async def test_case_63_the_lease_between_agents_at_the_bus_level(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    pw = await upstream.project_workspace(str(workdir), runtime(SLEEPER))
    issue_a = await upstream.issue("ACME-1")
    issue_b = await upstream.issue("ACME-2")
    ws = await upstream.workspace(str(workdir), pw=pw, mode="shared_workspace")
    run_a = await upstream.run_started(ws, "agent-a", issue_a)
    run_b = await upstream.run_started(ws, "agent-b", issue_b)
    await sup.known(ws)

    async def as_agent(name: str, run: str, action: str = "start") -> Any:
        async def attempt() -> Any:
            reply = await sup.control(action, ws, principal=agent(name, run))
            # Until the controller's run.started is copied, the run does not hold the workspace.
            return None if isinstance(reply, ErrorReply) and reply.code == "forbidden" else reply

        return await eventually(attempt, what=f"{name} acting for its run")

    claimed = await as_agent("agent-a", run_a)
    assert isinstance(claimed, Ok), claimed
    lease = claimed.result["lease"]
    assert (lease["outcome"], lease["ownerKey"]) == ("claimed", f"issue:{issue_a}")

    conflict = await as_agent("agent-b", run_b)
    assert isinstance(conflict, ErrorReply)
    assert (conflict.code, conflict.status) == ("workspace_runtime_lease_conflict", 409)
    details = conflict.details
    assert details["ownerKey"] == f"issue:{issue_a}"
    assert details["requestedOwnerKey"] == f"issue:{issue_b}"
    assert (details["ownerIssueId"], details["ownerRunId"]) == (issue_a, run_a)
    assert details["remediation"].startswith("Do not retry this start")
    # The refused request left nothing behind: one operation, the first agent's.
    assert len(await _operations(sup, ws)) == 1

    await upstream.issue_status(issue_a, "in_progress", "done")

    async def reclaim() -> Any:
        reply = await sup.control("start", ws, principal=agent("agent-b", run_b))
        return reply if isinstance(reply, Ok) else None

    reclaimed = await eventually(reclaim, what="agent-b reclaiming the lease")
    lease = reclaimed.result["lease"]
    assert (lease["outcome"], lease["ownerKey"]) == ("reclaimed", f"issue:{issue_b}")
    assert lease["reclaimedFrom"] == {"ownerKey": f"issue:{issue_a}",
                                      "reason": "owner_issue_terminal"}  # fmt: skip
    # The same owner renews; the board always bypasses.
    renewed = await sup.control("stop", ws, principal=agent("agent-b", run_b))
    assert isinstance(renewed, Ok)
    assert renewed.result["lease"]["outcome"] == "renewed"
    board = await sup.ok_control("start", ws)
    assert board["lease"]["outcome"] == "bypassed"
    assert board["operation"]["metadata"]["runtimeLease"]["outcome"] == "bypassed"


async def _operations(sup: Sup, ws: str) -> list[dict[str, Any]]:
    from contracts.execution_commands import ListWorkspaceOperations
    from contracts.workspace_subjects import workspace_operations

    result = await sup.ok(workspace_operations("supervisor"),
                          ListWorkspaceOperations(principal=BOARD, workspace_id=ws))  # fmt: skip
    items: list[dict[str, Any]] = result["items"]
    return items


async def test_an_agent_needs_a_run_of_its_own_holding_the_workspace(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    pw = await upstream.project_workspace(str(workdir), runtime(SLEEPER))
    ws = await upstream.workspace(str(workdir), pw=pw)
    elsewhere = await upstream.workspace(str(workdir / "x"), pw=pw)
    run = await upstream.run_started(elsewhere, "agent-a")
    await sup.known(ws)
    await sup.known(elsewhere)

    async def refused(principal: Principal) -> ErrorReply:
        reply = await sup.control("start", ws, principal=principal)
        assert isinstance(reply, ErrorReply), reply
        return reply

    assert (await refused(agent("agent-a", run))).code == "forbidden"
    no_run = Principal(company_id="c-acme", actor=Actor(type="agent", id="agent-a"))
    assert (await refused(no_run)).code == "forbidden"
    assert (await refused(agent("agent-b", run))).code == "forbidden"
    other_company = Principal(company_id="c-other", actor=Actor(type="board", id="b"))
    missing = await refused(other_company)
    assert (missing.code, missing.status) == ("not_found", 404)
    assert await _operations(sup, ws) == []


async def test_an_agents_run_copied_after_its_request_still_lets_it_act(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    # The controller publishes a run's start through its outbox, while it hands the adapter its
    # token directly: the adapter's first request may come before the supervisor's copy of its run.
    await start_supervisor()
    pw = await upstream.project_workspace(str(workdir), runtime(SLEEPER))
    issue = await upstream.issue("ACME-1")
    ws = await upstream.workspace(str(workdir), pw=pw, issue=issue)
    await sup.known(ws)
    run = str(uuid.uuid4())

    asked = time.monotonic()
    control = asyncio.ensure_future(sup.control("start", ws, principal=agent("agent-a", run)))
    await asyncio.sleep(0.5)
    assert not control.done()
    await upstream.run_started(ws, "agent-a", issue, run=run)
    reply = await control
    assert isinstance(reply, Ok), reply
    assert reply.result["lease"]["ownerKey"] == f"issue:{issue}"
    assert [r["status"] for r in reply.result["runtimeServices"]] == ["running"]
    assert time.monotonic() - asked < OWN_WAIT + 1.0

    # Once the copies know the run, a contradiction is refused at once: another agent naming it,
    # and the run on another workspace.
    elsewhere = await upstream.workspace(str(workdir / "x"), pw=pw)
    await sup.known(elsewhere)
    for principal, target in ((agent("agent-b", run), ws), (agent("agent-a", run), elsewhere)):
        asked = time.monotonic()
        refused = await sup.control("start", target, principal=principal)
        assert isinstance(refused, ErrorReply), refused
        assert (refused.code, refused.status) == ("forbidden", 403), refused
        assert time.monotonic() - asked < OWN_WAIT / 2
    # A run never heard of: refused once the copies had their moment.
    asked = time.monotonic()
    refused = await sup.control("start", ws, principal=agent("agent-a", str(uuid.uuid4())))
    assert isinstance(refused, ErrorReply), refused
    assert (refused.code, refused.status) == ("forbidden", 403), refused
    assert time.monotonic() - asked >= OWN_WAIT - 0.1


async def test_the_admin_key_controls_no_runtime_service(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    # The gateway refuses it; over the bus the supervisor does too (ARCHITECTURE §5.1).
    await start_supervisor()
    pw = await upstream.project_workspace(str(workdir), runtime(SLEEPER))
    ws = await upstream.workspace(str(workdir), pw=pw)
    await sup.known(ws)
    for action, fields in (("start", {"ws": ws}), ("stop", {"ws": ws}), ("start", {"pw": pw})):
        refused = await sup.control(action, principal=OPERATOR, **fields)
        assert isinstance(refused, ErrorReply), refused
        assert (refused.code, refused.status) == ("forbidden", 403), refused
        assert refused.message == (
            "The admin key may not control runtime services; a board key, a board session, an "
            "agent key or a run token may."
        )
        assert refused.details == {
            "actorKind": "admin", "resource": "runtime_service", "action": "control",
        }  # fmt: skip
    assert (await sup.state(ws)).runtime_services == []
    assert await _operations(sup, ws) == []
    # A board key still does.
    assert (await sup.ok_control("start", ws))["lease"]["outcome"] == "bypassed"


async def test_case_64_kinds_that_do_not_fit_the_action(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    config = runtime(SLEEPER, jobs=[JobSpec(name="migrate", command="echo migrated")])
    pw = await upstream.project_workspace(str(workdir), config)
    ws = await upstream.workspace(str(workdir), pw=pw)
    await sup.known(ws)

    run_service = await sup.error("run", ws, workspace_command_id="service:web")
    start_job = await sup.error("start", ws, workspace_command_id="job:migrate")
    run_nothing = await sup.error("run", ws)
    unknown_command = await sup.error("start", ws, workspace_command_id="service:nope")
    out_of_range = await sup.error("start", ws, service_index=7)

    assert (run_service.code, run_service.status) == ("unprocessable", 422)
    assert "should be started or restarted, not run" in run_service.message
    assert (start_job.status, start_job.message) == (422, 'Workspace job "migrate" can only be run')
    assert (run_nothing.status, run_nothing.message) == (422, "Select a workspace job to run")
    assert (unknown_command.code, unknown_command.status) == ("not_found", 404)
    assert out_of_range.status == 422
    # An unknown action never reaches the use case (the gateway answers 404 before the bus).
    raw = msgspec.json.encode({**msgspec.to_builtins(ControlRuntime(principal=BOARD,
                               workspace_id=ws, action="start")), "action": "explode"})  # fmt: skip
    reply = await sup.bus.request(runtime_control("local"), raw, timeout=5)
    assert isinstance(reply, ErrorReply)
    assert reply.code == "validation_failed"
    assert await _operations(sup, ws) == []


async def test_a_workspace_without_a_path_is_422(
    start_supervisor: Any, upstream: Upstream, sup: Sup
) -> None:
    await start_supervisor()
    pw = await upstream.project_workspace("/nonexistent", runtime(SLEEPER))
    ws = await upstream.workspace(None, pw=pw)  # type: ignore[arg-type]
    await sup.known(ws)

    reply = await sup.error("start", ws)

    assert (reply.status, reply.message) == (
        422,
        "Execution workspace needs a local path before Clipyard can run workspace commands",
    )


async def test_a_long_start_answers_accepted_and_shows_starting_before_it_is_ready(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    # Ready only after ~6 s, well past the reply (sent 0.5 s before the request's 3 s deadline).
    slow = http_service(
        "slow", command="sleep 6; exec python3 -m http.server $PORT --bind 127.0.0.1"
    )
    pw = await upstream.project_workspace(str(workdir), runtime(slow))
    ws = await upstream.workspace(str(workdir), pw=pw)
    await sup.known(ws)

    command = ControlRuntime(principal=BOARD, workspace_id=ws, action="start")
    reply = await sup.bus.request(runtime_control("local"), command, timeout=3)

    assert isinstance(reply, Accepted), reply
    (row,) = (await sup.state(ws)).runtime_services
    assert row.status == "starting"
    assert row.port is not None

    async def finished() -> OperationView | None:
        view = await sup.bus.call(
            service_query("supervisor", "operation"),
            GetOperation(principal=BOARD, operation_id=reply.operation_id),
            OperationView,
            timeout=5,
        )
        return view if view.status != "running" else None

    view = await eventually(finished, 20, "the start to finish")
    assert view.status == "succeeded", view.error
    result = msgspec.convert(view.result, RuntimeControlResult)
    assert [r.status for r in result.runtime_services] == ["running"]
    assert result.operation.status == "succeeded"
