"""Runtime reads over the bus by agent keys and run tokens (ARCHITECTURE §5.1): a runtime
service's log and a workspace's runtime state only for the agent's own workspaces (another of
its company: 403; another company's: 404); runtime summaries leave out what is not its own; a
project workspace's operations only for an agent working in its shared checkout, never from an
isolated worktree of it. The copies that say what is an agent's lag the realizer: an issue
assigned a moment ago is its assignee's all the same (a refusal waits for the copies, at most
``OWN_WAIT``); the admin key reads none of it."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import msgspec
import pytest
from bus_world import BOARD, OPERATOR, Sup, Upstream, eventually, http_service, runtime

from contracts.base import Actor, ErrorReply, Ok, Principal
from contracts.execution_commands import (
    GetWorkspaceOperation,
    GetWorkspaceOperationOutput,
    ListWorkspaceOperations,
)
from contracts.runtime_commands import (
    GetRuntimeServiceLog,
    GetRuntimeState,
    ListRuntimeSummaries,
    RuntimeSummaries,
)
from contracts.runtime_subjects import RUNTIME_LOG, RUNTIME_STATE, RUNTIME_SUMMARIES
from contracts.workspace_config import JobSpec
from contracts.workspace_events import IssueAssigned
from contracts.workspace_subjects import (
    workspace_operation,
    workspace_operation_output,
    workspace_operations,
)
from runtime_supervisor.orchestration.freshness import OWN_WAIT

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
    # Another agent's workspace of the company: 403 (after the copies' moment, so asked all at
    # once); another company's: 404 naming it, at once.
    outsiders = (_key("agent-b"), _token("agent-b", str(uuid.uuid4()), issue_b))
    *refusals, theirs, refused_state = await asyncio.gather(
        *(log(outsider, ws_a) for outsider in outsiders),
        log(token_a, ws_b),
        sup.request(RUNTIME_STATE, GetRuntimeState(principal=_key("agent-b"), workspace_id=ws_a)),
    )
    for refused in refusals:
        assert (refused.code, refused.status) == ("forbidden", 403), refused
        assert refused.details["workspaceId"] == ws_a
    assert theirs.status == 403
    hidden = await log(OTHER_COMPANY, ws_a)
    assert (hidden.code, hidden.details) == ("not_found", {"workspaceId": ws_a})

    # The runtime state answers the same way.
    state = await sup.request(RUNTIME_STATE, GetRuntimeState(principal=token_a, workspace_id=ws_a))
    assert not isinstance(state, ErrorReply), state
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
        return list(
            await asyncio.gather(
                sup.request(workspace_operation("supervisor"), detail),
                sup.request(workspace_operation_output("supervisor"), output),
            )
        )

    for reader in (BOARD, _key("agent-c"), _token("agent-c", run_c, issue_c)):
        detail, output = await read(reader)
        assert isinstance(detail, Ok), detail
        assert detail.result["cwd"] == str(workdir)
        assert isinstance(output, Ok), output
        assert output.result["totalBytes"] > 0
    # The agent of an isolated worktree of the same project workspace: 403, key and token.
    outsiders = (_key("agent-a"), _token("agent-a", run_a, issue_a))
    for replies in await asyncio.gather(*(read(outsider) for outsider in outsiders)):
        for refused in replies:
            assert isinstance(refused, ErrorReply), refused
            assert (refused.code, refused.status) == ("forbidden", 403), refused
            assert refused.details == {"operationId": op}


async def test_a_reassigned_issues_new_assignee_reads_the_logs_though_the_copy_comes_late(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    talker = http_service("talker", command="echo hello from the service; exec sleep 300",
                          port=None, readiness=None)  # fmt: skip
    pw = await upstream.project_workspace(str(workdir), runtime(talker))
    issue = await _assigned(upstream, "ACME-1", "agent-a")
    ws = await upstream.workspace(str(workdir), pw=pw, issue=issue)
    await sup.known(ws)
    started = await sup.ok_control("start", ws)
    service_id = started["runtimeServices"][0]["id"]

    def query(principal: Principal) -> GetRuntimeServiceLog:
        return GetRuntimeServiceLog(principal=principal, workspace_id=ws, service_id=service_id)

    async def said_hello() -> Any:
        reply = await sup.request(RUNTIME_LOG, query(BOARD))
        return reply if isinstance(reply, Ok) and "hello" in reply.result["text"] else None

    await eventually(said_hello, what="the service's output")
    assert isinstance(await sup.request(RUNTIME_LOG, query(_key("agent-a"))), Ok)

    # The issue is reassigned to agent-b, which reads the log at once: the realizer's event
    # reaches the supervisor's copies 0.5 s after the request.
    asked = time.monotonic()
    read = asyncio.ensure_future(sup.request(RUNTIME_LOG, query(_key("agent-b"))))
    await asyncio.sleep(0.5)
    assert not read.done()
    await upstream.publish(IssueAssigned(**upstream.envelope("issue", issue),
                                         assignee_agent_id="agent-b"))  # fmt: skip
    reply = await read
    assert isinstance(reply, Ok), reply
    assert "hello from the service" in reply.result["text"]
    assert time.monotonic() - asked < OWN_WAIT + 1.0
    # The former assignee no longer reads it (the copies have had the reassignment).
    refused = await sup.request(RUNTIME_LOG, query(_key("agent-a")))
    assert isinstance(refused, ErrorReply)
    assert (refused.code, refused.status) == ("forbidden", 403), refused


async def test_the_admin_key_reads_no_runtime_and_no_workspace_operation(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    job = JobSpec(name="hello", command="echo hello")
    pw = await upstream.project_workspace(str(workdir), runtime(jobs=[job]))
    ws = await upstream.workspace(str(workdir), pw=pw)
    await sup.known(ws)
    op = (await sup.ok_control("run", ws, workspace_command_id="job:hello"))["operation"]["id"]
    asked = {
        "runtime services": [
            (RUNTIME_STATE, GetRuntimeState(principal=OPERATOR, workspace_id=ws)),
            (RUNTIME_LOG, GetRuntimeServiceLog(principal=OPERATOR, workspace_id=ws,
                                               service_id=str(uuid.uuid4()))),
            (RUNTIME_SUMMARIES, ListRuntimeSummaries(principal=OPERATOR, workspace_ids=[ws])),
        ],
        "execution workspaces": [
            (workspace_operations("supervisor"),
             ListWorkspaceOperations(principal=OPERATOR, workspace_id=ws)),
            (workspace_operation("supervisor"),
             GetWorkspaceOperation(principal=OPERATOR, operation_id=op)),
            (workspace_operation_output("supervisor"),
             GetWorkspaceOperationOutput(principal=OPERATOR, operation_id=op)),
        ],
    }  # fmt: skip
    for noun, queries in asked.items():
        for subject, query in queries:
            reply = await sup.request(subject, query)
            assert isinstance(reply, ErrorReply), (subject, reply)
            assert (reply.code, reply.status) == ("forbidden", 403), (subject, reply)
            assert reply.message.startswith(f"The admin key may not read {noun}; "), reply
    # The board still reads them all (the made-up service: past the access check, not found).
    for subject, query in [q for queries in asked.values() for q in queries]:
        reply = await sup.request(subject, msgspec.structs.replace(query, principal=BOARD))
        if subject == RUNTIME_LOG:
            assert isinstance(reply, ErrorReply), reply
            assert (reply.status, set(reply.details)) == (404, {"runtimeServiceId"}), reply
        else:
            assert isinstance(reply, Ok), (subject, reply)
