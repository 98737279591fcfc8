"""Heartbeat runs through HTTP against the running stack, with a real agent script (the
``process`` adapter running ``tests/e2e/agents/agent.py``).

An untrusted agent on an isolated workspace reads its environment, calls ``heartbeat-context``
with its run token, commits in its worktree and sets its issue ``in_review``: the run succeeds,
the commit is on the workspace branch (read with git), the run's events show the six stages in
order, the ephemeral dev server configured ``running`` served the run and was stopped after it,
and the run token works during the run, only for its issue, and not after.

The run token is learnt without the agent ever writing it anywhere: the agent waits (printing
``agent waiting``) while the test, as root, reads ``CLIPYARD_API_KEY`` from the adapter process's
``/proc/<pid>/environ`` (found by its ``CLIPYARD_RUN_ID``). Command lines are checked right then
(a token passed as an argument, such as ``bwrap --setenv``, would show in ``/proc/*/cmdline`` to
every user), and after the run every file under the test's folder (stores, worktrees, run logs,
service logs, spans), every stored row, the JetStream store and every HTTP answer read are
searched for it.

Also: assigning an issue wakes its agent (``assignment``); two agents woken on one issue run one
after the other, never together; an untrusted agent on a shared workspace fails with
``low_trust_violation`` and a message saying how to fix it, before anything runs.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.canary import Canary
from tests.e2e.gitutil import git
from tests.e2e.heartbeatutil import (
    STAGES,
    create_agent,
    grant_trust,
    read_events,
    run_processes,
    stage_sequence,
    token_of_run,
    wait_log,
    wait_run,
    wake,
)
from tests.e2e.heartbeatutil import (
    brief as _brief,
)
from tests.e2e.hostfacts import port_free, wait_until
from tests.e2e.runtimeutil import HTTP_SERVER, SHARED, Board, runtime_board, status_of

pytestmark = pytest.mark.e2e

DEV = {
    "name": "dev",
    "command": HTTP_SERVER,
    "port": {"type": "auto"},
    "readiness": {"type": "http", "urlTemplate": "http://127.0.0.1:{{port}}/"},
    "lifecycle": "ephemeral",
}
"""The run's dev server: ephemeral, desired ``running`` (the default desired state: the realizer
refuses an explicit ``desiredState`` in a project workspace's ``runtimeConfig``), so a run starts
it and stops it."""

ADAPTER_VARS = {
    "API_URL",
    "API_KEY",
    "RUN_ID",
    "AGENT_ID",
    "COMPANY_ID",
    "TASK_ID",
    "WAKE_REASON",
    "WORKSPACE_ID",
    "WAKE_PAYLOAD_JSON",
}
"""The ``CLIPYARD_*`` (and ``PAPERCLIP_*``) variables an adapter may get (API.md)."""

RUN_EVENT_TYPES = (
    "run.queued.v1",
    "run.started.v1",
    "run.stage_changed.v1",
    "run.workspace_leased.v1",
    "run.workspace_released.v1",
    "run.finished.v1",
    "slot.granted.v1",
    "slot.adapter_started.v1",
    "slot.adapter_finished.v1",
    "slot.released.v1",
    "runtime_service.started.v1",
    "runtime_service.stopped.v1",
)


async def new_issue(board: Board, title: str, **extra: Any) -> dict[str, Any]:
    """A new in-progress issue of the board's project (asserted 201)."""
    answer = await board.http.post(
        f"/api/companies/{board.company['id']}/issues",
        json={"title": title, "projectId": board.project["id"], "status": "in_progress", **extra},
    )
    assert answer.status_code == 201, status_of(answer)
    issue: dict[str, Any] = answer.json()
    return issue


def _cmdlines_with(token: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if token.encode() in (proc / "cmdline").read_bytes():
                    found.append(proc.name)
            except OSError:
                continue
    return found


def _finished_for(run_id: str) -> Any:
    def done(events: list[dict[str, Any]]) -> bool:
        return any(e["type"] == "run.finished.v1" and e["aggregateId"] == run_id for e in events)

    return done


@pytest.mark.both_stores
async def test_untrusted_agent_commits_in_its_isolated_workspace_and_its_token_leaks_nowhere(
    stack: Any, tmp_path: Path, nats_server: Any, reaper: None
) -> None:
    async with runtime_board(stack, tmp_path, runtime_config={"services": [DEV]}) as board:
        other = await new_issue(board, "Someone else's")
        issue = await new_issue(board, "Write the note")
        agent = await create_agent(
            board,
            "honest",
            AGENT_WAIT_FLAG=".proceed",
            AGENT_OTHER_ISSUE=other["id"],
            AGENT_FILE="agent-note.txt",
        )
        assert agent["trustLevel"] == "untrusted", agent
        accepted = await wake(board.http, agent["id"], issueId=issue["id"], reason="please write")
        run_id = accepted["runId"]
        assert accepted["status"] == "queued", _brief(accepted)
        await wait_log(board.http, run_id, "agent waiting")
        # The adapter waits: the test reads the token it was given, as root, from /proc.
        token = await token_of_run(run_id)
        assert token, "an empty run token"
        assert _cmdlines_with(token) == [], "the run token is on a process's command line"
        with Canary(token) as canary:
            canary.sample_now()
            async with canary.client(stack, board.http.headers["Authorization"][7:]) as seen:
                running = (await seen.get(f"/api/runs/{run_id}")).json()
                assert running["status"] == "running", _brief(running)
                assert running["stage"] in ("adapter_launch", "result_collection"), running
                ws_id = running["executionWorkspaceId"]
                assert ws_id, running
                ws = (await seen.get(f"/api/execution-workspaces/{ws_id}")).json()
                assert ws["sourceIssueId"] == issue["id"], ws
                assert ws["mode"] == "isolated_workspace", ws
                # The run's dev server was started for it, leased to it, and answers.
                (dev,) = [r for r in ws["runtimeServices"] if r["serviceName"] == "dev"]
                assert dev["status"] == "running", _brief(dev)
                assert run_id in dev["leaseRunIds"], dev
                assert dev["startedByRunId"] == run_id, dev
                # The token works during the run, for its own issue only.
                async with canary.client(stack, token) as as_run:
                    own = await as_run.get(f"/api/issues/{issue['id']}/heartbeat-context")
                    assert own.status_code == 200, status_of(own)
                    assert own.json()["run"]["id"] == run_id
                    elsewhere = await as_run.get(f"/api/issues/{other['id']}")
                    assert elsewhere.status_code in (403, 404), status_of(elsewhere)
                    wrong_run = await as_run.patch(
                        f"/api/issues/{issue['id']}",
                        json={"priority": "high"},
                        headers={"X-Run-Id": other["id"]},
                    )
                    assert wrong_run.status_code in (400, 401, 403), status_of(wrong_run)
                    agents = await as_run.post(
                        f"/api/companies/{board.company['id']}/agents",
                        json={
                            "name": "x",
                            "adapterType": "process",
                            "adapterConfig": {"command": ["true"]},
                        },
                    )
                    assert agents.status_code == 403, status_of(agents)
                Path(ws["cwd"], ".proceed").touch()
                run = await wait_run(seen, run_id)
                assert run["status"] == "succeeded", _brief(run)
                assert run["exitCode"] == 0, run
                assert run["errorCode"] is None, run
                assert run["stage"] == "cleanup", run
                assert run["usage"] == {"inputTokens": 3, "outputTokens": 5}, run
                assert run["source"] == "on_demand", run
                result = run["result"]
                assert result["waited"] is True, result
                env = result["env"]
                # Its environment: every variable with its PAPERCLIP_* alias, nothing of ours.
                for name in ADAPTER_VARS - {"WAKE_PAYLOAD_JSON"}:
                    assert env["vars"][name] == {"present": True, "aliasMatches": True}, name
                assert env["values"]["RUN_ID"] == run_id
                assert env["values"]["AGENT_ID"] == agent["id"]
                assert env["values"]["COMPANY_ID"] == board.company["id"]
                assert env["values"]["TASK_ID"] == issue["id"]
                assert env["values"]["WORKSPACE_ID"] == ws_id
                assert env["values"]["WAKE_REASON"] == "please write"
                ours = {n[len("CLIPYARD_") :] for n in env["names"] if n.startswith("CLIPYARD_")}
                assert ours <= ADAPTER_VARS, sorted(ours - ADAPTER_VARS)
                assert not [n for n in env["names"] if "NATS" in n or n.startswith("OTEL")], env
                # Contained: another user than the services', its HOME a private folder.
                assert result["uid"] != 0, result["uid"]
                assert result["cwd"] == ws["cwd"], result
                assert result["home"], result
                assert not result["home"].startswith("/root"), result
                # heartbeat-context with its token: its issue, workspace, run and dev server.
                context = result["context"]
                assert context["status"] == 200, context
                assert context["issueId"] == issue["id"], context
                assert context["workspaceId"] == ws_id, context
                assert context["workspaceCwd"] == ws["cwd"], context
                assert context["branchName"] == ws["branchName"], context
                assert context["runId"] == run_id, context
                assert [s["serviceName"] for s in context["services"]] == ["dev"], context
                assert [s.get("status") for s in result["served"]] == [200], result["served"]
                # It committed on the workspace branch and handed its issue in for review.
                assert result["git"]["commit"][0] == 0, result["git"]
                assert result["git"]["branch"] == ws["branchName"], result["git"]
                assert result["patch"] == {"status": 200, "issueStatus": "in_review"}, result
                assert result["otherIssue"]["get"] in (403, 404), result["otherIssue"]
                assert result["otherIssue"]["patch"] in (403, 404), result["otherIssue"]
                # Its token stops working now that the run ended: revoked, not expired. The
                # revocation travels controller -> relay -> JetStream -> gateway inbox, which on a
                # loaded machine can take more than a few seconds; the deadline (15 s) stays well
                # inside the token's expiry (the adapter's 60 s timeout), and the refusal must
                # say the run ended, which the gateway checks before expiry.
                async with canary.client(stack, token) as as_run:

                    async def refused() -> str | None:
                        answer = await as_run.get(f"/api/issues/{issue['id']}/heartbeat-context")
                        assert answer.status_code in (200, 401), status_of(answer)
                        return status_of(answer) if answer.status_code == 401 else None

                    refusal = await wait_until(refused, 15, "the run token refused after the run")
                    assert "has ended" in refusal, refusal
                    assert (await as_run.get(f"/api/runs/{run_id}")).status_code == 401
                # The log as the supervisor wrote it, the issue, the workspace.
                log = await seen.get(f"/api/runs/{run_id}/log")
                assert log.status_code == 200, status_of(log)
                assert "agent waiting" in log.text
                read = await seen.get(f"/api/issues/{issue['id']}")
                assert read.json()["status"] == "in_review", read.json()
                untouched = await seen.get(f"/api/issues/{other['id']}")
                assert untouched.json()["status"] == "in_progress", untouched.json()

                async def in_review() -> bool:
                    detail = await seen.get(f"/api/execution-workspaces/{ws_id}")
                    return bool(detail.json()["status"] == "in_review")

                await wait_until(in_review, 10, "the workspace in_review after the run")
                # The dev server was stopped after the run.

                async def dev_stopped() -> dict[str, Any] | None:
                    detail = (await seen.get(f"/api/execution-workspaces/{ws_id}")).json()
                    row = next(r for r in detail["runtimeServices"] if r["id"] == dev["id"])
                    return row if row["status"] == "stopped" else None

                await wait_until(dev_stopped, 15, "the dev server stopped after the run")
                assert port_free(dev["port"]), dev
                runs = await seen.get(
                    f"/api/companies/{board.company['id']}/runs", params={"agentId": agent["id"]}
                )
                assert [r["id"] for r in runs.json()] == [run_id], runs.json()
            # The commit, as git sees it in the repository.
            head = git(board.repo, "rev-parse", ws["branchName"])
            assert head == result["git"]["head"], (head, result["git"])
            assert git(board.repo, "log", "-1", "--format=%an", head) == "Agent"
            note = git(board.repo, "show", f"{ws['branchName']}:agent-note.txt")
            assert note == f"written by run {run_id}"
            assert git(board.repo, "rev-parse", "main") != head
            # Its events: the six stages in order, the slot and the dev server around them.
            events = await read_events(
                board.http, board.company["id"], _finished_for(run_id), types=RUN_EVENT_TYPES
            )
            assert token not in json.dumps(events), "the run token is in an event"
            assert stage_sequence(events, run_id) == STAGES, stage_sequence(events, run_id)
            mine = [e for e in events if run_id in (e.get("runId"), e["aggregateId"])]
            kinds = [e["type"] for e in mine]
            assert kinds[-1] == "run.finished.v1", kinds
            assert mine[-1]["status"] == "succeeded", mine[-1]

            def at(kind: str, aggregate: str | None = None) -> int:
                found = [
                    i
                    for i, e in enumerate(events)
                    if e["type"] == kind
                    and (aggregate or run_id) in (e.get("runId"), e["aggregateId"])
                ]
                assert found, f"no {kind} for {aggregate or run_id}: {kinds}"
                return found[0]

            for earlier, later in (
                (at("run.queued.v1"), at("run.started.v1")),
                (at("run.workspace_leased.v1"), at("slot.granted.v1")),
                (at("runtime_service.started.v1", dev["id"]), at("slot.adapter_started.v1")),
                (at("slot.adapter_started.v1"), at("slot.adapter_finished.v1")),
                (at("slot.adapter_finished.v1"), at("run.workspace_released.v1")),
            ):
                assert earlier < later, [(e["type"], e["aggregateId"]) for e in events]
            granted = next(e for e in mine if e["type"] == "slot.granted.v1")
            assert granted["contained"] is True, granted
            assert granted["sandbox"] == "bwrap", granted

            async def dev_stop_event() -> list[dict[str, Any]]:
                return await read_events(
                    board.http,
                    board.company["id"],
                    lambda es: any(e["type"] == "runtime_service.stopped.v1" for e in es),
                    types=("runtime_service.stopped.v1",),
                )

            (stopped,) = await dev_stop_event()
            assert stopped["aggregateId"] == dev["id"], stopped
            assert run_processes(run_id) == []
        canary.assert_clean(
            [tmp_path, Path(nats_server.store_dir)],
            stores=sorted((stack.home / "data").glob("*.sqlite")),
            postgres_dsn=stack.postgres_dsn,
            min_files=20,
        )


@pytest.mark.both_stores
async def test_assigning_an_issue_wakes_its_agent(stack: Any, tmp_path: Path) -> None:
    async with runtime_board(stack, tmp_path) as board:
        agent = await create_agent(board, "sleeper", AGENT_SLEEP="0")
        issue = await new_issue(board, "Yours now")
        runs_url = f"/api/companies/{board.company['id']}/runs"
        assert (await board.http.get(runs_url)).json() == []
        patched = await board.http.patch(
            f"/api/issues/{issue['id']}", json={"assigneeAgentId": agent["id"]}
        )
        assert patched.status_code == 200, status_of(patched)

        async def woken() -> list[dict[str, Any]]:
            answer = await board.http.get(runs_url, params={"agentId": agent["id"]})
            assert answer.status_code == 200, status_of(answer)
            return list(answer.json())

        (row,) = await wait_until(woken, 10, "a run of the assigned agent")
        assert row["source"] == "assignment", row
        assert row["wakeReason"] == "issue_assigned", row
        assert row["issueId"] == issue["id"], row
        run = await wait_run(board.http, row["id"])
        assert run["status"] == "succeeded", _brief(run)
        values = run["result"]["env"]["values"]
        assert values["WAKE_REASON"] == "issue_assigned", values
        assert values["TASK_ID"] == issue["id"], values
        # Only one wake for one assignment.
        assert len(await woken()) == 1
        # The event stream takes an aggregate, as `events tail --type` does: every run.* type.
        events = await read_events(
            board.http, board.company["id"], _finished_for(run["id"]), types=("run",)
        )
        kinds = {e["type"] for e in events}
        assert {"run.queued.v1", "run.finished.v1"} <= kinds, kinds
        assert all(kind.startswith("run.") for kind in kinds), kinds


async def _two_at_once(board: Board, issue: dict[str, Any], agents: list[dict[str, Any]]) -> None:
    accepted = await asyncio.gather(
        *(wake(board.http, a["id"], issueId=issue["id"]) for a in agents)
    )
    runs = await asyncio.gather(*(wait_run(board.http, a["runId"]) for a in accepted))
    for run in runs:
        assert run["status"] == "succeeded", _brief(run)
    assert runs[0]["executionWorkspaceId"] == runs[1]["executionWorkspaceId"], runs
    first, second = sorted((r["result"] for r in runs), key=lambda r: r["startedAt"])
    assert first["endedAt"] <= second["startedAt"], (
        f"the adapters overlapped on one workspace: {first['startedAt']:.3f}-"
        f"{first['endedAt']:.3f} and {second['startedAt']:.3f}-{second['endedAt']:.3f}"
    )


async def test_two_wakes_on_one_workspace_run_one_after_the_other(
    stack: Any, tmp_path: Path
) -> None:
    async with runtime_board(stack, tmp_path) as board:
        agents = [
            await create_agent(board, "sleeper", name=f"worker {n}", AGENT_SLEEP="1.5")
            for n in (1, 2)
        ]
        issue = await new_issue(board, "Shared work")
        # Before the issue has a workspace: both runs realize it, one holds it at a time.
        await _two_at_once(board, issue, agents)
        # Now that it has one: the run lease is taken on it before the second run starts.
        await _two_at_once(board, issue, agents)


async def test_untrusted_agent_on_a_shared_workspace_fails_with_low_trust_violation(
    stack: Any, tmp_path: Path
) -> None:
    async with runtime_board(stack, tmp_path, policy=SHARED) as board:
        agent = await create_agent(board, "honest", AGENT_FILE="should-not-exist.txt")
        issue = await new_issue(board, "Work in the main checkout")
        before = git(board.repo, "rev-parse", "HEAD")
        accepted = await wake(board.http, agent["id"], issueId=issue["id"])
        run = await wait_run(board.http, accepted["runId"])
        assert run["status"] == "failed", _brief(run)
        assert run["errorCode"] == "low_trust_violation", run
        message = run["error"] or ""
        for fix in ("isolated_workspace", "trusted", "executionWorkspacePolicy"):
            assert fix in message, f"the message does not name {fix!r}: {message}"
        assert run["exitCode"] is None, run
        assert run["executionWorkspaceId"] is None, run
        # Nothing ran: no adapter, no file, no commit, no workspace realized.
        assert not (board.repo / "should-not-exist.txt").exists()
        assert git(board.repo, "rev-parse", "HEAD") == before
        assert git(board.repo, "status", "--porcelain") == ""
        workspaces = await board.http.get(
            f"/api/companies/{board.company['id']}/execution-workspaces",
            params={"issueId": issue["id"]},
        )
        assert workspaces.status_code == 200, status_of(workspaces)
        assert workspaces.json() == [], workspaces.json()
        events = await read_events(
            board.http,
            board.company["id"],
            _finished_for(run["id"]),
            types=("run.queued.v1", "run.stage_changed.v1", "run.finished.v1", "slot.granted.v1"),
        )
        stages = stage_sequence(events, run["id"])
        assert stages == ["wakeup", "workspace_resolution", "cleanup"], stages
        assert not [e for e in events if e["type"] == "slot.granted.v1"], events
        # A trusted agent may work there (the fix the message names); only the admin key
        # grants that.
        refused = await board.http.patch(
            f"/api/agents/{agent['id']}", json={"trustLevel": "trusted"}
        )
        assert refused.status_code == 403, status_of(refused)
        await grant_trust(board.http, agent["id"])
        again = await wait_run(
            board.http, (await wake(board.http, agent["id"], issueId=issue["id"]))["runId"]
        )
        assert again["status"] == "succeeded", _brief(again)
        assert (board.repo / "should-not-exist.txt").exists()
