"""Retry-safety and repository identity on the host's real git (no bus): a creation retried
after a crash adopts the worktree it made and provisions it; archive removes a worktree from its
own repository even after the project workspace's cwd changed; a changed repoUrl is cloned anew."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from realizer_git_helpers import clone_with_bare_origin, git, init_repo, use_hermetic_git

from workspace_realizer.orchestration.archive import archive
from workspace_realizer.orchestration.clone import url_keyed_target
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.realize import RealizeRequest, realize

pytestmark = pytest.mark.integration

POLICY = {"enabled": True, "defaultMode": "isolated_workspace",
          "workspaceStrategy": {"type": "git_worktree", "baseRef": "main",
                                "provisionCommand": "echo provisioned > .provisioned"}}  # fmt: skip


@pytest.fixture(autouse=True)
def hermetic_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_hermetic_git(tmp_path, monkeypatch)


def seed(real: Realizer, world: Any, repo: Path) -> tuple[Any, str, str, str]:
    board = world.company()
    project = world.project(board, POLICY)
    checkout = real.app.create_project_workspace(
        board, project, {"name": "web", "cwd": str(repo)}, None
    )
    return board, project, str(checkout.id), world.issue(board, project, title="Add login")


async def test_a_creation_retried_after_a_crash_adopts_and_provisions_its_worktree(
    real: Realizer, world: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    board, _, _, issue = seed(real, world, repo)

    def crash(fields: Any) -> Any:
        raise RuntimeError("the service died before recording the workspace")

    with monkeypatch.context() as patch:
        patch.setattr(real.app, "record_realized", crash)
        with pytest.raises(RuntimeError):
            await realize(real, board, RealizeRequest(issue))
    (path,) = (real.home / "worktrees").glob("*/ACME-1-add-login")
    assert git(path, "branch", "--show-current") == "ACME-1-add-login"
    assert not (path / ".provisioned").exists()
    done = await realize(real, board, RealizeRequest(issue))
    ws = real.app.workspaces[done.workspace_id]
    assert (Path(ws.cwd or ""), ws.branch_created, ws.provision_state) == (path, True, "succeeded")
    assert (path / ".provisioned").read_text() == "provisioned\n"
    # Ours: archiving the (unstarted, issue done) workspace deletes the branch it created.
    real.app.update_issue(board, issue, {"status": "done"})
    await archive(real, board, done.workspace_id)
    assert real.app.workspaces[done.workspace_id].status == "archived"
    assert git(repo, "branch", "--list", "ACME-1-add-login") == ""


async def test_archive_uses_the_worktrees_own_repository_after_a_cwd_change(
    real: Realizer, world: Any, repo: Path, tmp_path: Path
) -> None:
    board, project, checkout, issue = seed(real, world, repo)
    done = await realize(real, board, RealizeRequest(issue))
    path = Path(real.app.workspaces[done.workspace_id].cwd or "")
    other = clone_with_bare_origin(tmp_path, "other", {"README.md": "# other\n"})
    real.app.update_project_workspace(board, project, checkout, {"cwd": str(other)})
    real.app.update_issue(board, issue, {"status": "done"})
    await archive(real, board, done.workspace_id)
    ws = real.app.workspaces[done.workspace_id]
    assert (ws.status, ws.cleanup_reason) == ("archived", None)
    assert not path.exists()
    assert str(path) not in git(repo, "worktree", "list")
    assert git(repo, "branch", "--list", "ACME-1-add-login") == ""


async def test_a_changed_repo_url_is_cloned_beside_the_old_clone(
    real: Realizer, world: Any, tmp_path: Path
) -> None:
    one = init_repo(tmp_path / "one" / "app", {"who.txt": "one\n"})
    two = init_repo(tmp_path / "two" / "app", {"who.txt": "two\n"})
    board = world.company()
    project = world.project(board, POLICY)
    pw = str(
        real.app.create_project_workspace(
            board, project, {"name": "web", "repo_url": str(one)}, None
        ).id
    )
    first_issue = world.issue(board, project, title="First")
    first = await realize(real, board, RealizeRequest(first_issue))
    plain = real.home / "checkouts" / project / pw / "app"
    assert real.app.project_workspaces[pw].checkout_path == str(plain)
    real.app.update_project_workspace(board, project, pw, {"repo_url": str(two)})
    second = await realize(real, board, RealizeRequest(world.issue(board, project, title="Two")))
    keyed = url_keyed_target(plain, str(two))
    checkout = real.app.project_workspaces[pw]
    assert (checkout.checkout_state, checkout.checkout_path) == ("ready", str(keyed))
    assert git(keyed, "remote", "get-url", "origin") == str(two)
    assert git(plain, "remote", "get-url", "origin") == str(one)
    # Each workspace works on its own repository's content.
    new_path = Path(real.app.workspaces[second.workspace_id].cwd or "")
    old_path = Path(real.app.workspaces[first.workspace_id].cwd or "")
    assert (new_path / "who.txt").read_text() == "two\n"
    assert (old_path / "who.txt").read_text() == "one\n"
