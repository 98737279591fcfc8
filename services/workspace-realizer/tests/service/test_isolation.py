"""Low-trust containment (DECISIONS 11): ``requireIsolation`` refuses, before any git or command
work, a realization that does not give the issue an isolated worktree."""

from __future__ import annotations

from typing import Any

import pytest

from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.domain.errors import LowTrustViolationError, RequiresProjectError
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.realize import RealizeRequest, realize, refuse_unisolated
from workspace_realizer.usecases.host.planning import plan_realization

ISOLATED = {"enabled": True, "defaultMode": "isolated_workspace", "allowIssueOverride": True,
            "workspaceStrategy": {"type": "git_worktree"}}  # fmt: skip
SHARED = {"enabled": True, "defaultMode": "shared_workspace", "allowIssueOverride": True}


def _seed(world: Any, policy: dict[str, Any] | None, **issue: Any) -> tuple[Any, str, str]:
    board = world.company()
    project = world.project(board, policy)
    world.checkout(board, project)
    return board, project, world.issue(board, project, **issue)


async def _refused(realizer: Realizer, board: Any, request: RealizeRequest) -> Any:
    with pytest.raises(LowTrustViolationError) as caught:
        await realize(realizer, board, request, "op-1")
    return caught.value


@pytest.mark.parametrize(
    ("policy", "settings", "resolved"),
    [
        (None, None, "shared_workspace"),
        (SHARED, None, "shared_workspace"),
        ({"defaultMode": "operator_branch"}, None, "operator_branch"),
        (SHARED, {"mode": "operator_branch"}, "operator_branch"),
        (SHARED, {"mode": "agent_default"}, "adapter_managed"),
        # The issue may not choose: the project's shared default wins.
        (
            {**SHARED, "allowIssueOverride": False},
            {"mode": "isolated_workspace"},
            "shared_workspace",
        ),
    ],
)
async def test_a_mode_without_an_isolated_worktree_is_refused_before_any_host_work(
    realizer: Realizer, app: WorkspaceRealizerApplication, world: Any, git: Any, commands: Any,
    policy: Any, settings: Any, resolved: str,
) -> None:  # fmt: skip
    board, _, issue = _seed(world, policy, settings=settings)
    before = app.last_notification_id()
    error = await _refused(realizer, board, RealizeRequest(issue, require_isolation=True))
    assert (error.code, error.status) == ("low_trust_violation", 422)
    assert error.details == {"issueId": issue, "resolvedMode": resolved}
    # The message says how to fix it.
    for words in ("executionWorkspacePolicy.defaultMode", "executionWorkspaceSettings.mode",
                  "isolated_workspace", "mark the agent trusted", "ACME-1", resolved):  # fmt: skip
        assert words in str(error), words
    # Nothing ran and nothing was recorded.
    assert git.calls == []
    assert commands.runs == []
    assert app.workspaces == {}
    assert app.last_notification_id() == before


async def test_the_same_realization_without_the_requirement_is_unchanged(
    realizer: Realizer, app: WorkspaceRealizerApplication, world: Any
) -> None:
    board, _, issue = _seed(world, SHARED)
    done = await realize(realizer, board, RealizeRequest(issue))
    assert app.workspaces[done.workspace_id].mode == "shared_workspace"


@pytest.mark.parametrize(
    ("policy", "settings"),
    [
        (ISOLATED, None),
        (SHARED, {"mode": "isolated_workspace"}),
        ({"defaultMode": "isolated"}, None),
    ],
)
async def test_an_isolated_worktree_is_realized(
    realizer: Realizer, app: WorkspaceRealizerApplication, world: Any, git: Any,
    policy: Any, settings: Any,
) -> None:  # fmt: skip
    board, _, issue = _seed(world, policy, settings=settings)
    done = await realize(realizer, board, RealizeRequest(issue, require_isolation=True))
    ws = app.workspaces[done.workspace_id]
    assert (ws.mode, ws.provider_type) == ("isolated_workspace", "git_worktree")
    assert "ensure_worktree" in git.names()
    # Realized again for the next run: its current isolated worktree is reused.
    again = await realize(realizer, board, RealizeRequest(issue, require_isolation=True))
    assert (again.workspace_id, again.created) == (done.workspace_id, False)


async def test_isolated_mode_with_a_strategy_that_makes_no_worktree_is_refused(
    realizer: Realizer, world: Any, git: Any
) -> None:
    policy = {**ISOLATED, "workspaceStrategy": {"type": "cloud_sandbox"}}
    board, _, issue = _seed(world, policy)
    error = await _refused(realizer, board, RealizeRequest(issue, require_isolation=True))
    assert error.details["resolvedMode"] == "isolated_workspace"
    assert "cloud_sandbox" in str(error)
    assert "git_worktree" in str(error)
    assert git.calls == []


async def test_reuse_existing_needs_an_isolated_worktree_to_reuse(
    realizer: Realizer, app: WorkspaceRealizerApplication, world: Any, git: Any
) -> None:
    board, project, first = _seed(world, ISOLATED)
    isolated = (await realize(realizer, board, RealizeRequest(first))).workspace_id
    shared_issue = world.issue(board, project, settings={"mode": "shared_workspace"})
    shared = (await realize(realizer, board, RealizeRequest(shared_issue))).workspace_id
    assert app.workspaces[shared].mode == "shared_workspace"
    second = world.issue(board, project)
    # Pinning the isolated worktree: allowed.
    pinned = RealizeRequest(second, "reuse_existing", isolated, require_isolation=True)
    assert (await realize(realizer, board, pinned)).workspace_id == isolated
    # Pinning the shared checkout: refused before any git work.
    calls = len(git.calls)
    third = world.issue(board, project)
    request = RealizeRequest(third, "reuse_existing", shared, require_isolation=True)
    error = await _refused(realizer, board, request)
    assert error.details == {"issueId": third, "resolvedMode": "reuse_existing"}
    assert shared in str(error)
    assert len(git.calls) == calls


async def test_the_issue_current_shared_workspace_is_not_reused_for_an_untrusted_run(
    realizer: Realizer, app: WorkspaceRealizerApplication, world: Any
) -> None:
    # The board ran the issue in the shared checkout; an untrusted run still needs isolation,
    # and the issue's settings say shared: refused (the current workspace is never borrowed).
    board, _, issue = _seed(world, SHARED)
    await realize(realizer, board, RealizeRequest(issue))
    error = await _refused(realizer, board, RealizeRequest(issue, require_isolation=True))
    assert error.details["resolvedMode"] == "shared_workspace"


def test_the_precheck_refuses_on_the_store_thread_and_leaves_other_refusals_to_realize(
    app: WorkspaceRealizerApplication, world: Any
) -> None:
    board, _, issue = _seed(world, SHARED)
    with pytest.raises(LowTrustViolationError):
        refuse_unisolated(app, board, RealizeRequest(issue, require_isolation=True))
    refuse_unisolated(app, board, RealizeRequest(issue))  # not required: nothing to refuse
    refuse_unisolated(app, board, RealizeRequest(issue, mode="isolated_workspace",
                                                 require_isolation=True))  # fmt: skip
    # A project without a project workspace: realize reports it, as it always did.
    bare = world.project(board, ISOLATED)
    orphan = world.issue(board, bare)
    refuse_unisolated(app, board, RealizeRequest(orphan, require_isolation=True))
    with pytest.raises(RequiresProjectError):
        plan_realization(app, board, orphan, None, None, None)
