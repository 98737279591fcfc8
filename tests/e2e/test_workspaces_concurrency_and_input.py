"""Workspaces through HTTP: twenty concurrent realizations of one repository with a planted hook
that must never run, and bad input refused without writing anything."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path
from typing import Any

import nats
import pytest

from contracts import subjects
from contracts.base import Actor, Principal
from contracts.service import ReplayReport, VerifyReplay
from natsbus import BusClient

from .test_workspaces_flow import _board_key, _issue, _project, git, make_repo

pytestmark = pytest.mark.e2e

SYSTEM = Principal(company_id=None, actor=Actor(type="system", id="e2e"))


async def _stored(nats_url: str, service: subjects.ServiceToken) -> int:
    nc = await nats.connect(nats_url)
    try:
        report = await BusClient(nc).call(
            subjects.service_query(service, "replay_verify"),
            VerifyReplay(principal=SYSTEM),
            ReplayReport,
            timeout=30,
        )
    finally:
        await nc.drain()
    assert report.ok, report.differences
    return report.notifications_replayed


async def test_twenty_concurrent_realizations_and_a_hook_that_never_runs(
    stack: Any, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo")
    witness = tmp_path / "hook-ran"
    for hook in ("post-checkout", "post-commit", "pre-commit", "reference-transaction"):
        path = repo / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\necho {hook} >> {witness}\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    key, company = await _board_key(stack)
    async with stack.client(key) as board:
        project = await _project(board, company, repo)
        issues = [await _issue(board, company, project, f"Task number {n}") for n in range(20)]
        answers = await asyncio.gather(
            *(board.post(f"/api/issues/{i['id']}/execution-workspace", json={}) for i in issues)
        )
        # All twenty succeed: twenty distinct worktrees on twenty distinct branches.
        assert [a.status_code for a in answers] == [201] * 20, [a.text for a in answers]
        workspaces = [a.json()["workspace"] for a in answers]
        assert len({w["cwd"] for w in workspaces}) == 20
        assert len({w["branchName"] for w in workspaces}) == 20
        for ws in workspaces:
            assert git(ws["cwd"], "rev-parse", "--abbrev-ref", "HEAD") == ws["branchName"]
        # No git lock error in any recorded step.
        for ws in workspaces[:5]:
            ops = await board.get(f"/api/execution-workspaces/{ws['id']}/workspace-operations")
            assert ops.status_code == 200
            assert all(op["status"] != "failed" for op in ops.json())
        # Archive one (issue done first): worktree remove and branch delete run server-side too.
        await board.patch(f"/api/issues/{issues[0]['id']}", json={"status": "done"})
        archived = await board.patch(
            f"/api/execution-workspaces/{workspaces[0]['id']}", json={"status": "archived"}
        )
        assert archived.status_code == 200, archived.text
    # The planted hooks never ran during any Clipyard git operation.
    assert not witness.exists(), witness.read_text()
    # (A hook does run for a user's own git: the witness mechanism works.)
    git(repo, "checkout", "-q", "-b", "user-branch")
    assert witness.exists()


async def test_bad_workspace_input_is_refused_and_writes_nothing(
    stack: Any, tmp_path: Path, nats_server: Any
) -> None:
    repo = make_repo(tmp_path / "repo")
    key, company = await _board_key(stack)
    other_key, _other = await _board_key(stack)
    async with stack.client(key) as board:
        project = await _project(board, company, repo)
        issue = await _issue(board, company, project, "Something")
        ws = (await board.post(f"/api/issues/{issue['id']}/execution-workspace", json={})).json()
        before = await _stored(nats_server.url, "realizer")

        # Neither cwd nor repoUrl: 422 with a sentence saying what to give.
        pathless = await board.post(
            f"/api/projects/{project['id']}/workspaces", json={"name": "nowhere"}
        )
        assert pathless.status_code == 422
        assert "cwd" in pathless.json()["error"]
        assert "repoUrl" in pathless.json()["error"]
        # Unknown filter values: 400 naming them.
        bad_status = await board.get(
            f"/api/companies/{company['id']}/execution-workspaces", params={"status": "sleepy"}
        )
        assert bad_status.status_code == 400
        assert "sleepy" in bad_status.text
        bad_issue_status = await board.get(
            f"/api/companies/{company['id']}/issues", params={"status": "halfdone"}
        )
        assert bad_issue_status.status_code == 400
        assert "halfdone" in bad_issue_status.text
        # Unknown field in a nested policy: 400 naming it.
        typo = await board.post(
            f"/api/companies/{company['id']}/projects",
            json={"name": "P", "executionWorkspacePolicy": {"defaultmode": "isolated_workspace"}},
        )
        assert typo.status_code == 400
        assert "defaultmode" in typo.text

    # Another company's workspace: 404, whether read, patched or realized.
    async with stack.client(other_key) as stranger:
        assert (
            await stranger.get(f"/api/execution-workspaces/{ws['workspace']['id']}")
        ).status_code == 404
        patched = await stranger.patch(
            f"/api/execution-workspaces/{ws['workspace']['id']}", json={"status": "archived"}
        )
        assert patched.status_code == 404
        assert (
            await stranger.post(f"/api/issues/{issue['id']}/execution-workspace", json={})
        ).status_code == 404

    # Nothing was written by any of it, and the worktree is untouched.
    assert await _stored(nats_server.url, "realizer") == before
    assert Path(ws["workspace"]["cwd"]).is_dir()
