"""No board key points the server at a host path (docs/design/isolation.md): a project
workspace's ``cwd``, a local or ``file://`` ``repoUrl`` and an absolute, ``~`` or ``..``
``worktreeParentDir`` are refused (403 naming the setting) unless an admin allowed a root that
holds them for the company, or made it ``hostTrusted``; a remote ``repoUrl`` and a relative
worktree parent need no grant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from eventsourcing.persistence import Tracking

from servicekit.access import AccessDeniedError
from workspace_realizer.application import WorkspaceRealizerApplication


@pytest.fixture(autouse=True)
def _no_stack_roots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLIPYARD_ALLOWED_ROOTS", raising=False)


def _refused(call: object, setting: str) -> None:
    with pytest.raises(AccessDeniedError) as caught:
        call()  # type: ignore[operator]
    assert caught.value.details["field"] == setting
    assert "host-access" in str(caught.value)


def test_a_board_key_names_no_host_path_without_a_grant(
    app: WorkspaceRealizerApplication, world: Any, tmp_path: Path
) -> None:
    board = world.company()
    project = world.project(board)
    elsewhere = tmp_path / "another-companys-checkout"
    elsewhere.mkdir()
    _refused(lambda: world.checkout(board, project, cwd=str(elsewhere)), "cwd")
    _refused(lambda: world.checkout(board, project, cwd=None, repo_url=str(elsewhere)), "repoUrl")
    _refused(lambda: world.checkout(board, project, cwd=None, repo_url=f"file://{elsewhere}"),
             "repoUrl")  # fmt: skip
    parent = "executionWorkspacePolicy.workspaceStrategy.worktreeParentDir"
    for value in ("/srv/trees", "~/trees", "../escape"):
        policy = {"workspaceStrategy": {"type": "git_worktree", "worktreeParentDir": value}}
        _refused(lambda p=policy: app.update_project(board, project, None, p), parent)
    # An issue's own strategy obeys the same rule.
    issue_parent = "executionWorkspaceSettings.workspaceStrategy.worktreeParentDir"
    settings = {"workspaceStrategy": {"type": "git_worktree", "worktreeParentDir": "/etc/x"}}
    _refused(lambda: world.issue(board, project, settings=settings), issue_parent)
    # A remote repository and a worktree parent under the home need no grant.
    world.checkout(board, project, cwd=None, repo_url="https://example.com/acme/web.git")
    relative = {"workspaceStrategy": {"type": "git_worktree", "worktreeParentDir": "trees"}}
    app.update_project(board, project, None, relative)


def test_an_admins_grant_allows_its_roots_only_and_host_trust_allows_all(
    app: WorkspaceRealizerApplication, world: Any, tmp_path: Path
) -> None:
    board = world.company()
    project = world.project(board)
    beta = world.company("c-beta", "BETA")
    beta_project = world.project(beta)
    allowed, other = tmp_path / "src", tmp_path / "other"
    (allowed / "web").mkdir(parents=True)
    other.mkdir()
    app.register_host_access("c-acme", False, [str(allowed)], Tracking("gateway", 50))
    world.checkout(board, project, cwd=str(allowed / "web"))
    _refused(lambda: world.checkout(board, project, cwd=str(other)), "cwd")
    # Another company's grant is not this one's.
    _refused(lambda: world.checkout(beta, beta_project, cwd=str(allowed / "web")), "cwd")
    app.register_host_access("c-acme", True, [], Tracking("gateway", 51))
    # The copy changed through the store, not in the read model under it: nothing failed to
    # project (a read-model object changed in place cannot take its own event again).
    assert app.projection_failures == 0
    assert app.host_grant("c-acme").trusted
    world.checkout(board, project, cwd=str(other))
    policy = {"workspaceStrategy": {"type": "git_worktree", "worktreeParentDir": "/srv/trees"}}
    app.update_project(board, project, None, policy)
