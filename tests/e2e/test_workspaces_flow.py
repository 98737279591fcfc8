"""Workspaces end to end through HTTP against the running stack, on a real local repository."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.gitutil import git, make_repo

pytestmark = [pytest.mark.e2e, pytest.mark.both_stores]


async def _board_key(stack: Any) -> tuple[str, dict[str, Any]]:
    async with stack.admin as admin:
        company = (await admin.post("/api/companies", json={"name": "Acme"})).json()
        key = (
            await admin.post(
                f"/api/companies/{company['id']}/api-keys", json={"name": "b", "kind": "board"}
            )
        ).json()["key"]
    return key, company


async def _project(board: Any, company: dict[str, Any], repo: Path) -> dict[str, Any]:
    project = await board.post(
        f"/api/companies/{company['id']}/projects",
        json={
            "name": "Robot",
            "executionWorkspacePolicy": {
                "enabled": True,
                "defaultMode": "isolated_workspace",
                "allowIssueOverride": True,
                "workspaceStrategy": {"type": "git_worktree", "baseRef": "main"},
            },
        },
    )
    assert project.status_code == 201, project.text
    workspace = await board.post(
        f"/api/projects/{project.json()['id']}/workspaces",
        json={"name": "main checkout", "cwd": str(repo), "isPrimary": True},
    )
    assert workspace.status_code == 201, workspace.text
    return dict(project.json())


async def _issue(board: Any, company: dict[str, Any], project: dict[str, Any], title: str) -> Any:
    issue = await board.post(
        f"/api/companies/{company['id']}/issues",
        json={"title": title, "projectId": project["id"], "status": "in_progress"},
    )
    assert issue.status_code == 201, issue.text
    return issue.json()


async def _realize(board: Any, issue: dict[str, Any]) -> dict[str, Any]:
    answer = await board.post(f"/api/issues/{issue['id']}/execution-workspace", json={})
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["created"] is True
    # Answered with its real delivery state, as a GET right after reads it: a new branch has
    # nothing main lacks.
    ws = body["workspace"]
    assert (ws["deliveryState"], ws["commitsAhead"]) == ("merged_by_ancestry", 0), ws
    await _same_as_read(board, ws)
    return dict(ws)


async def _same_as_read(board: Any, answered: dict[str, Any]) -> None:
    """A write's answer carries the delivery state a GET of the workspace gives now."""
    read = (await board.get(f"/api/execution-workspaces/{answered['id']}")).json()
    shown = ("status", "deliveryState", "commitsAhead")
    assert {k: answered[k] for k in shown} == {k: read[k] for k in shown}, (answered, read)


async def test_squash_merged_workspace_archives_cleanly(stack: Any, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    key, company = await _board_key(stack)
    async with stack.client(key) as board:
        project = await _project(board, company, repo)
        issue = await _issue(board, company, project, "Add worktree support")
        assert issue["identifier"] == "ACME-1"
        ws = await _realize(board, issue)
        # The worktree exists, outside the repository, on its own branch.
        worktree = Path(ws["cwd"])
        assert worktree.is_dir()
        assert not worktree.is_relative_to(repo)
        assert git(worktree, "rev-parse", "--abbrev-ref", "HEAD") == ws["branchName"]
        assert ws["branchName"] == "ACME-1-add-worktree-support"
        # Two commits on the branch; the base moves on; then the branch is squash-merged.
        for name in ("a.txt", "b.txt"):
            (worktree / name).write_text(name)
            git(worktree, "add", name)
            git(worktree, "commit", "-q", "-m", f"add {name}")
        (repo / "other.txt").write_text("meanwhile\n")
        git(repo, "add", "other.txt")
        git(repo, "commit", "-q", "-m", "meanwhile on main")
        git(repo, "merge", "--squash", ws["branchName"])
        git(repo, "commit", "-q", "-m", "squash: add worktree support")
        detail = (await board.get(f"/api/execution-workspaces/{ws['id']}")).json()
        assert detail["deliveryState"] == "merged_by_squash"
        assert detail["commitsAhead"] == 2
        # Issue done, archive: directory gone, branch deleted, status archived.
        done = await board.patch(f"/api/issues/{issue['id']}", json={"status": "done"})
        assert done.status_code == 200, done.text
        archived = await board.patch(
            f"/api/execution-workspaces/{ws['id']}", json={"status": "archived"}
        )
        assert archived.status_code == 200, archived.text
        assert archived.json()["status"] == "archived"
        await _same_as_read(board, archived.json())  # its branch is gone: as a GET says
        assert not worktree.exists()
        assert git(repo, "branch", "--list", ws["branchName"]) == ""
        # The events endpoint shows every transition, oldest first.
        events = (await board.get(f"/api/execution-workspaces/{ws['id']}/events")).json()
        types = [e["type"] for e in events]
        assert types[0] == "workspace.realized.v1"
        assert "workspace.archived.v1" in types
        assert all(e["actor"] for e in events)


async def test_open_issue_blocks_archive_then_rescue_and_reopen(stack: Any, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    key, company = await _board_key(stack)
    async with stack.client(key) as board:
        project = await _project(board, company, repo)
        issue = await _issue(board, company, project, "Risky change")
        ws = await _realize(board, issue)
        worktree = Path(ws["cwd"])
        # Still open: archiving is refused with the reason, and nothing is touched.
        blocked = await board.patch(
            f"/api/execution-workspaces/{ws['id']}", json={"status": "archived"}
        )
        assert blocked.status_code == 409
        assert blocked.json()["code"] == "close_blocked"
        assert "open" in blocked.json()["error"]
        assert worktree.is_dir()
        # An untracked file and an undelivered commit; the issue is cancelled; archive.
        (worktree / "notes.txt").write_text("unsaved thoughts\n")
        (worktree / "work.txt").write_text("work\n")
        git(worktree, "add", "work.txt")
        git(worktree, "commit", "-q", "-m", "undelivered work")
        head = git(worktree, "rev-parse", "HEAD")
        cancelled = await board.patch(f"/api/issues/{issue['id']}", json={"status": "cancelled"})
        assert cancelled.status_code == 200
        archived = await board.patch(
            f"/api/execution-workspaces/{ws['id']}", json={"status": "archived"}
        )
        assert archived.status_code == 200, archived.text
        body = archived.json()
        assert body["status"] == "archived"
        assert not worktree.exists()
        # A rescue ref holds both; the undelivered branch is kept.
        assert len(body["rescueRefs"]) == 1
        rescue = body["rescueRefs"][0]
        rescue_ref = rescue if isinstance(rescue, str) else rescue["ref"]
        assert git(repo, "show", f"{rescue_ref}:notes.txt") == "unsaved thoughts"
        assert git(repo, "rev-parse", ws["branchName"]) == head
        # Reopen brings the file and the commit back.
        reopened = await board.patch(
            f"/api/execution-workspaces/{ws['id']}", json={"status": "active"}
        )
        assert reopened.status_code == 200, reopened.text
        assert reopened.json()["status"] == "active"
        assert reopened.json()["deliveryState"] == "unmerged", reopened.json()
        assert reopened.json()["commitsAhead"] == 1, reopened.json()
        await _same_as_read(board, reopened.json())
        assert (worktree / "notes.txt").read_text() == "unsaved thoughts\n"
        assert git(worktree, "rev-parse", "HEAD") == head
