"""A workspace realized from the worktree pool is a workspace like any other: provisioned at
hand-out (DECISIONS 1), on its branch at the base, archived with its branch; the pool's own
worktrees are never workspaces."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from realizer_git_helpers import git

from workspace_realizer.adapters.host import default_ports
from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.adapters.worktree_pool import POOL_DIR
from workspace_realizer.orchestration.archive import archive
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.realize import RealizeRequest, realize

pytestmark = pytest.mark.integration

POLICY = {"enabled": True, "defaultMode": "isolated_workspace",
          "workspaceStrategy": {"type": "git_worktree", "baseRef": "main",
                                "provisionCommand": "echo provisioned > .provisioned"}}  # fmt: skip


@pytest.fixture
def pooled(app: Any, executor: Any, supervisor: Any, home: Path) -> Realizer:
    """The realizer on the host's real git with a pool of one worktree per project workspace."""
    ports = default_ports(home, pool_size=1, pool_refresh=0)
    return Realizer(app=app, store=executor.run, ports=ports, home=home,
                    stop_services=supervisor.stop)  # fmt: skip


async def test_a_pooled_workspace_is_provisioned_delivered_and_archived_like_a_cold_one(
    pooled: Realizer, world: Any, repo: Path
) -> None:
    git_port = pooled.ports.git
    assert isinstance(git_port, HostGit)
    assert git_port.pool is not None
    board = world.company()
    project = world.project(board, POLICY)
    pooled.app.create_project_workspace(board, project, {"name": "web", "cwd": str(repo)}, None)
    first = await realize(pooled, board, RealizeRequest(world.issue(board, project, title="One")))
    cold = Path(pooled.app.workspaces[first.workspace_id].cwd or "")
    pool_dir = cold.parent / POOL_DIR
    (key,) = git_port.pool.keys()  # the first realize warms the pool
    for _ in range(200):
        if git_port.pool.entries(key):
            break
        await asyncio.sleep(0.05)
    entry = git_port.pool.entries(key)[0]
    issue = world.issue(board, project, title="Two")
    second = await realize(pooled, board, RealizeRequest(issue))
    ws = pooled.app.workspaces[second.workspace_id]
    path = Path(ws.cwd or "")
    # The pooled worktree, moved: its git dir is the entry's, its files were not written again.
    assert git(path, "rev-parse", "--git-dir").endswith(f"/worktrees/{entry.path.name}")
    assert (ws.branch_name, git(path, "branch", "--show-current")) == ("ACME-2-two",) * 2
    assert ws.base_ref_sha == git(repo, "rev-parse", "main") == git(path, "rev-parse", "HEAD")
    assert ws.branch_created
    assert (path / ".provisioned").read_text() == "provisioned\n"
    # The pool's worktrees are not workspaces.
    recorded = {w.cwd for w in pooled.app.workspaces.values()}
    assert not any(POOL_DIR in (cwd or "") for cwd in recorded)
    # Archived like a cold one: worktree and branch gone.
    pooled.app.update_issue(board, issue, {"status": "done"})
    await archive(pooled, board, second.workspace_id)
    assert not path.exists()
    assert git(repo, "branch", "--list", "ACME-2-two") == ""
    await git_port.pool.close()
    assert not pool_dir.exists()
    assert POOL_DIR not in git(repo, "worktree", "list")
