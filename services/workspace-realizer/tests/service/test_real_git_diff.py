"""A realized workspace's diff on the host's real git: its commits, changed and untracked files,
one file's unified diff; a path the diff does not list is 404; a workspace whose worktree is gone
says why."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from realizer_git_helpers import commit, git

from servicekit import NotFoundError
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.diff import workspace_diff
from workspace_realizer.orchestration.facts import gather
from workspace_realizer.orchestration.realize import RealizeRequest, realize

pytestmark = pytest.mark.integration

POLICY = {"enabled": True, "defaultMode": "isolated_workspace",
          "workspaceStrategy": {"type": "git_worktree", "baseRef": "main"}}  # fmt: skip


async def test_a_workspaces_diff_against_its_base(real: Realizer, world: Any, repo: Path) -> None:
    board = world.company()
    project = world.project(board, POLICY)
    real.app.create_project_workspace(board, project, {"name": "web", "cwd": str(repo)}, None)
    issue = world.issue(board, project, title="Fix login")
    realized = await realize(real, board, RealizeRequest(issue))
    path = Path(real.app.workspaces[realized.workspace_id].cwd or "")
    commit(path, {"login.py": "def login():\n    return True\n"}, message="Add login")
    commit(path, {"README.md": "# web\n\nLogin works.\n"}, message="Document login")
    (path / "scratch.txt").write_text("todo\n")

    def facts() -> Any:
        return gather(real.app, board, realized.workspace_id)

    diff = await workspace_diff(real, facts(), None)
    assert diff.available
    assert diff.base_ref == "origin/main"
    assert diff.merge_base == git(repo, "rev-parse", "origin/main")
    assert [c.subject for c in diff.commits] == ["Document login", "Add login"]
    assert [(f.path, f.status, f.additions) for f in diff.files] == [
        ("README.md", "modified", 2),
        ("login.py", "added", 2),
    ]
    assert diff.untracked == ["scratch.txt"]
    readme = await workspace_diff(real, facts(), "README.md")
    assert readme.patch is not None
    assert "+Login works.\n" in readme.patch.text
    with pytest.raises(NotFoundError) as refused:
        await workspace_diff(real, facts(), "../../../etc/passwd")
    assert refused.value.details["path"] == "../../../etc/passwd"

    shutil.rmtree(path)  # the worktree gone from disk: nothing to compare, and why
    gone = await workspace_diff(real, facts(), None)
    assert not gone.available
    assert gone.reason is not None
    assert "no longer on disk" in gone.reason
    assert gone.files == []
