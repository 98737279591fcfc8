"""The orchestrators on the host's real git and shell adapters (no bus): realize, squash-merge
delivery, archive with branch deletion; rescue of undelivered work and reopen (DECISIONS 2, 3, 12)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from realizer_git_helpers import git

from servicekit.access import Access
from workspace_realizer.orchestration.archive import archive
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.facts import gather, inspect
from workspace_realizer.orchestration.realize import Realization, RealizeRequest, realize
from workspace_realizer.orchestration.reopen import reopen

pytestmark = pytest.mark.integration

POLICY = {"enabled": True, "defaultMode": "isolated_workspace",
          "workspaceStrategy": {"type": "git_worktree", "baseRef": "main",
                                "provisionCommand": "echo provisioned > .provisioned"}}  # fmt: skip


def commit(cwd: Path, name: str, text: str, message: str) -> None:
    """Write and commit one file (only that one: ``.provisioned`` stays out of the commit)."""
    (cwd / name).write_text(text)
    git(cwd, "add", name)
    git(cwd, "commit", "-q", "-m", message)


async def realized(
    real: Realizer, world: Any, repo: Path, title: str
) -> tuple[Access, str, Realization, Path]:
    """A company, a project with ``POLICY`` on ``repo``, an issue titled ``title`` realized:
    ``(board, issue, realization, worktree path)``."""
    board = world.company()
    project = world.project(board, POLICY)
    real.app.create_project_workspace(board, project, {"name": "web", "cwd": str(repo)}, None)
    issue = world.issue(board, project, title=title)
    done = await realize(real, board, RealizeRequest(issue))
    return board, issue, done, Path(real.app.workspaces[done.workspace_id].cwd or "")


async def test_squash_merged_work_is_delivered_and_archived_with_its_branch(
    real: Realizer, world: Any, repo: Path
) -> None:
    board, issue, done, path = await realized(real, world, repo, "Add login")
    ws = real.app.workspaces[done.workspace_id]
    assert git(path, "branch", "--show-current") == "ACME-1-add-login" == ws.branch_name
    assert (path / ".provisioned").read_text() == "provisioned\n"
    # Two commits on the branch; the base moves on; the branch is squash-merged into it.
    commit(path, "login.py", "def login(): ...\n", "login")
    commit(path, "login.py", "def login():\n    return True\n", "login works")
    git(path, "push", "-q", "origin", "ACME-1-add-login")
    commit(repo, "other.txt", "elsewhere\n", "meanwhile")
    git(repo, "fetch", "-q", "origin")
    git(repo, "merge", "-q", "--squash", "origin/ACME-1-add-login")
    git(repo, "commit", "-q", "-m", "Add login (squashed)")
    git(repo, "push", "-q", "origin", "main")
    facts = await real.store(gather, real.app, board, done.workspace_id)
    delivery = await inspect(real, facts)
    assert (delivery.state, delivery.commits_ahead) == ("merged_by_squash", 2)
    # Issue done: archive removes the worktree and the branch Clipyard created.
    real.app.update_issue(board, issue, {"status": "done"})
    await archive(real, board, done.workspace_id)
    assert real.app.workspaces[done.workspace_id].status == "archived"
    assert not path.exists()
    assert git(repo, "branch", "--list", "ACME-1-add-login") == ""
    assert str(path) not in git(repo, "worktree", "list")


async def test_undelivered_work_is_rescued_and_reopen_brings_it_back(
    real: Realizer, world: Any, repo: Path
) -> None:
    board, issue, done, path = await realized(real, world, repo, "Try something")
    commit(path, "idea.py", "x = 1\n", "an idea")
    head = git(path, "rev-parse", "HEAD")
    (path / "notes.txt").write_text("keep me\n")
    real.app.update_issue(board, issue, {"status": "cancelled"})
    await archive(real, board, done.workspace_id)
    ws = real.app.workspaces[done.workspace_id]
    ref = f"refs/clipyard/rescue/{done.workspace_id}/1"
    assert ws.status == "archived"
    assert [r["ref"] for r in ws.rescue_refs] == [ref]
    assert git(repo, "rev-parse", "--verify", ref)
    assert not path.exists()
    assert git(repo, "rev-parse", "refs/heads/ACME-1-try-something") == head
    # Reopen: the worktree is back on its branch, with the commit and the untracked file.
    await reopen(real, board, done.workspace_id)
    assert real.app.workspaces[done.workspace_id].status == "active"
    assert git(path, "rev-parse", "HEAD") == head
    assert (path / "notes.txt").read_text() == "keep me\n"
    assert git(path, "branch", "--show-current") == "ACME-1-try-something"


async def test_branch_reconcile_forward_and_quarantine(
    real: Realizer, world: Any, repo: Path
) -> None:
    from servicekit.access import AccessDeniedError, ActorKind
    from workspace_realizer.domain.errors import BranchReconcileRefusedError
    from workspace_realizer.orchestration.reconcile import reconcile_branch

    board, _, done, path = await realized(real, world, repo, "Rename me")
    (path / ".provisioned").unlink()  # a clean tree
    # The agent renamed the branch and moved on (Paperclip PR #9117).
    git(path, "checkout", "-q", "-b", "feat/rename")
    commit(path, "a.txt", "a\n", "work")
    agent = Access(kind=ActorKind.AGENT_KEY, company_id="c-acme", actor_id="agent-1")
    with pytest.raises(AccessDeniedError):
        await reconcile_branch(real, agent, done.workspace_id, "forward", None)
    # Not while a run could hold it: the workspace must be idle.
    with pytest.raises(BranchReconcileRefusedError, match="idle"):
        await reconcile_branch(real, board, done.workspace_id, "forward", None)
    real.app.update_workspace(board, done.workspace_id, {"status": "idle"})
    with pytest.raises(BranchReconcileRefusedError, match="reason"):
        await reconcile_branch(real, board, done.workspace_id, "override", " ")
    outcome, inspection = await reconcile_branch(real, board, done.workspace_id, "forward", None)
    ws = real.app.workspaces[done.workspace_id]
    assert (ws.branch_name, ws.name, ws.branch_created) == ("feat/rename", "feat/rename", False)
    assert (inspection["ancestryVerdict"], inspection["fromBranch"]) == (
        "ancestor",
        "ACME-1-rename-me",
    )
    # A dirty tree on a stray branch: quarantine keeps it in a rescue ref, back on the record.
    git(path, "checkout", "-q", "-b", "stray")
    (path / "scratch.txt").write_text("wip\n")
    outcome, _ = await reconcile_branch(
        real, board, done.workspace_id, "quarantine_restore", "cleanup"
    )
    assert outcome.rescue is not None
    assert git(path, "branch", "--show-current") == "feat/rename"
    assert not (path / "scratch.txt").exists()
    assert real.app.workspaces[done.workspace_id].rescue_refs[-1]["ref"] == outcome.rescue.ref
    # Both reconciles are public facts.
    from uuid import UUID

    from workspace_realizer.publishing import to_contract

    facts = [to_contract(e) for e in real.app.events.get(UUID(done.workspace_id))]
    reconciled = [f for f in facts if type(f).__name__ == "WorkspaceBranchReconciled"]
    assert [(f.mode, f.branch_name) for f in reconciled] == [
        ("forward", "feat/rename"),
        ("quarantine_restore", "feat/rename"),
    ]
    assert reconciled[1].rescue_ref is not None
