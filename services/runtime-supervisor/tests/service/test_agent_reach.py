"""Runtime reads over the bus by agent keys and run tokens (ARCHITECTURE §5.1): a runtime
service's log and a workspace's runtime state only for the agent's own workspaces (another of
its company: 403; another company's: 404); runtime summaries leave out what is not its own; a
project workspace's operations only for an agent working in its shared checkout, never from an
isolated worktree of it."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import msgspec
import pytest
from bus_world import BOARD, Sup, Upstream, runtime

from contracts.base import Actor, ErrorReply, Ok, Principal
from contracts.execution_commands import GetWorkspaceOperation, GetWorkspaceOperationOutput
from contracts.runtime_commands import (
    GetRuntimeServiceLog,
    GetRuntimeState,
    ListRuntimeSummaries,
    RuntimeSummaries,
)
from contracts.runtime_subjects import RUNTIME_LOG, RUNTIME_STATE, RUNTIME_SUMMARIES
from contracts.workspace_config import JobSpec
from contracts.workspace_events import IssueAssigned
from contracts.workspace_subjects import workspace_operation, workspace_operation_output

pytestmark = pytest.mark.integration

OTHER_COMPANY = Principal(company_id="c-other", actor=Actor(type="board", id="board-other"))


def _key(agent_id: str) -> Principal:
    return Principal(company_id="c-acme", actor=Actor(type="agent", id=agent_id))


def _token(agent_id: str, run_id: str, issue_id: str | None) -> Principal:
    return Principal(company_id="c-acme", actor=Actor(type="agent", id=agent_id), run_id=run_id,
                     issue_id=issue_id, run_bound=True)  # fmt: skip


async def _assigned(upstream: Upstream, identifier: str, agent_id: str) -> str:
    issue = await upstream.issue(identifier)
    await upstream.publish(IssueAssigned(**upstream.envelope("issue", issue),
                                         assignee_agent_id=agent_id))  # fmt: skip
    return issue


async def test_an_agent_reads_the_runtime_of_its_own_workspaces_only(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    pw = await upstream.project_workspace(str(workdir), runtime())
    issue_a = await _assigned(upstream, "ACME-1", "agent-a")
    issue_b = await _assigned(upstream, "ACME-2", "agent-b")
    ws_a = await upstream.workspace(str(workdir / "a"), pw=pw, issue=issue_a)
    ws_b = await upstream.workspace(str(workdir / "b"), pw=pw, issue=issue_b, branch="ACME-2")
    run_a = await upstream.run_started(ws_a, "agent-a", issue_a)
    await sup.known(ws_a)
    await sup.known(ws_b)  # the realizer's events so far (the issues' assignments before them)
    await sup.run_copied(ws_a, run_a, "agent-a")
    token_a = _token("agent-a", run_a, issue_a)

    async def log(principal: Principal, ws: str) -> ErrorReply:
        query = GetRuntimeServiceLog(principal=principal, workspace_id=ws,
                                     service_id=str(uuid.uuid4()))  # fmt: skip
        reply = await sup.request(RUNTIME_LOG, query)
        assert isinstance(reply, ErrorReply), reply
        return reply

    # Its own workspace: past the access check (the made-up service is then not found).
    for reader in (_key("agent-a"), token_a, BOARD):
        found = await log(reader, ws_a)
        assert (found.status, set(found.details)) == (404, {"runtimeServiceId"}), found
    # Another agent's workspace of the company: 403; another company's: 404 naming it.
    for outsider in (_key("agent-b"), _token("agent-b", str(uuid.uuid4()), issue_b)):
        refused = await log(outsider, ws_a)
        assert (refused.code, refused.status) == ("forbidden", 403), refused
        assert refused.details["workspaceId"] == ws_a
    assert (await log(token_a, ws_b)).status == 403
    hidden = await log(OTHER_COMPANY, ws_a)
    assert (hidden.code, hidden.details) == ("not_found", {"workspaceId": ws_a})

    # The runtime state answers the same way.
    state = await sup.request(RUNTIME_STATE, GetRuntimeState(principal=token_a, workspace_id=ws_a))
    assert not isinstance(state, ErrorReply), state
    refused_state = await sup.request(
        RUNTIME_STATE, GetRuntimeState(principal=_key("agent-b"), workspace_id=ws_a)
    )
    assert isinstance(refused_state, ErrorReply)
    assert refused_state.status == 403

    # Summaries leave out the workspaces that are not the agent's.
    async def summarized(principal: Principal) -> list[str]:
        query = ListRuntimeSummaries(principal=principal, workspace_ids=[ws_a, ws_b])
        reply = await sup.ok(RUNTIME_SUMMARIES, query)
        return [s.workspace_id for s in msgspec.convert(reply, RuntimeSummaries).items]

    assert await summarized(BOARD) == [ws_a, ws_b]
    assert await summarized(_key("agent-a")) == [ws_a]
    assert await summarized(_key("agent-b")) == [ws_b]
    assert await summarized(token_a) == [ws_a]


async def test_a_project_workspaces_operations_are_read_only_from_its_shared_checkout(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    job = JobSpec(name="hello", command="echo hello from $(pwd)")
    pw = await upstream.project_workspace(str(workdir), runtime(jobs=[job]))
    issue_a = await _assigned(upstream, "ACME-1", "agent-a")
    issue_c = await _assigned(upstream, "ACME-3", "agent-c")
    (workdir / "a").mkdir()
    isolated = await upstream.workspace(str(workdir / "a"), pw=pw, issue=issue_a)
    shared = await upstream.workspace(str(workdir), pw=pw, issue=issue_c, mode="shared_workspace")
    run_a = await upstream.run_started(isolated, "agent-a", issue_a)
    run_c = await upstream.run_started(shared, "agent-c", issue_c)
    await sup.known(isolated)
    await sup.known(shared)
    await sup.run_copied(isolated, run_a, "agent-a")
    await sup.run_copied(shared, run_c, "agent-c")
    # The board runs the project workspace's job (no run, no issue): its command, host cwd
    # and output are the board's, and the shared checkout's.
    ran = await sup.ok_control("run", pw=pw, workspace_command_id="job:hello")
    op = ran["operation"]["id"]

    async def read(principal: Principal) -> list[Any]:
        detail = GetWorkspaceOperation(principal=principal, operation_id=op)
        output = GetWorkspaceOperationOutput(principal=principal, operation_id=op)
        return [
            await sup.request(workspace_operation("supervisor"), detail),
            await sup.request(workspace_operation_output("supervisor"), output),
        ]

    for reader in (BOARD, _key("agent-c"), _token("agent-c", run_c, issue_c)):
        detail, output = await read(reader)
        assert isinstance(detail, Ok), detail
        assert detail.result["cwd"] == str(workdir)
        assert isinstance(output, Ok), output
        assert output.result["totalBytes"] > 0
    # The agent of an isolated worktree of the same project workspace: 403, key and token.
    for outsider in (_key("agent-a"), _token("agent-a", run_a, issue_a)):
        for refused in await read(outsider):
            assert isinstance(refused, ErrorReply), refused
            assert (refused.code, refused.status) == ("forbidden", 403), refused
            assert refused.details == {"operationId": op}
