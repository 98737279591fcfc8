"""Mode resolution (reference §5.1), branch names (reference §5.3, DECISIONS 5) and worktree places."""

from __future__ import annotations

from pathlib import Path

import pytest

from workspace_realizer.domain.errors import InvalidInputError
from workspace_realizer.domain.policy import (
    Strategy,
    check_worktree_parent,
    parse_policy,
    render_branch,
    resolve_mode,
    sanitize_branch,
    worktree_parent,
)


def test_the_project_default_applies_when_the_issue_inherits() -> None:
    # Defaults: shared workspace, nothing to branch.
    assert (
        resolve_mode(parse_policy(None), requested=None, settings=None).mode == "shared_workspace"
    )
    # An isolated project gives a worktree strategy even when its strategy type is the default.
    policy = parse_policy(
        {"defaultMode": "isolated_workspace", "workspaceStrategy": {"type": "project_primary"}}
    )
    resolved = resolve_mode(policy, requested=None, settings={"mode": "inherit"})
    assert (resolved.mode, resolved.strategy.type) == ("isolated_workspace", "git_worktree")
    # adapter_default becomes the adapter-managed mode; operator_branch stays itself.
    assert (
        resolve_mode(
            parse_policy({"defaultMode": "adapter_default"}), requested=None, settings=None
        ).mode
        == "adapter_managed"
    )
    assert (
        resolve_mode(
            parse_policy({"defaultMode": "operator_branch"}), requested=None, settings=None
        ).mode
        == "operator_branch"
    )


def test_an_issue_overrides_only_when_the_project_allows_it() -> None:
    allowed = parse_policy({"defaultMode": "shared_workspace", "allowIssueOverride": True})
    assert (
        resolve_mode(allowed, requested=None, settings={"mode": "isolated_workspace"}).mode
        == "isolated_workspace"
    )
    # The request's own mode wins over the issue's setting.
    assert (
        resolve_mode(
            allowed, requested="agent_default", settings={"mode": "isolated_workspace"}
        ).mode
        == "adapter_managed"
    )
    refused = parse_policy({"defaultMode": "shared_workspace", "allowIssueOverride": False})
    resolved = resolve_mode(refused, requested="isolated_workspace", settings=None)
    assert resolved.mode == "shared_workspace"
    assert "does not allow" in resolved.warnings[0]
    # A disabled policy does not stop an issue's choice.
    disabled = parse_policy({"enabled": False, "allowIssueOverride": False})
    assert (
        resolve_mode(disabled, requested=None, settings={"mode": "isolated_workspace"}).mode
        == "isolated_workspace"
    )


def test_the_issue_strategy_wins_for_isolated_workspaces() -> None:
    policy = parse_policy(
        {
            "defaultMode": "isolated_workspace",
            "workspaceStrategy": {"type": "git_worktree", "baseRef": "main"},
        }
    )
    settings = {
        "workspaceStrategy": {
            "type": "git_worktree",
            "baseRef": "develop",
            "branchTemplate": "x/{{slug}}",
        }
    }
    strategy = resolve_mode(policy, requested=None, settings=settings).strategy
    assert (strategy.base_ref, strategy.branch_template) == ("develop", "x/{{slug}}")


def test_reuse_existing_needs_a_workspace_id() -> None:
    policy = parse_policy(None)
    pinned = resolve_mode(
        policy, requested="reuse_existing", settings=None, requested_workspace_id="w-1"
    )
    assert (pinned.mode, pinned.reuse_workspace_id) == ("reuse_existing", "w-1")
    from_settings = resolve_mode(
        policy, requested=None, settings={"mode": "reuse_existing", "executionWorkspaceId": "w-2"}
    )
    assert from_settings.reuse_workspace_id == "w-2"
    with pytest.raises(InvalidInputError, match="executionWorkspaceId"):
        resolve_mode(policy, requested="reuse_existing", settings=None)
    with pytest.raises(InvalidInputError, match="Unknown workspace mode"):
        resolve_mode(policy, requested="sideways", settings=None)


def test_branch_names_from_the_template() -> None:
    # Reference case 45, with our default template.
    values = {"issue.identifier": "PAP-447", "issue.title": "Add Worktree Support"}
    assert render_branch(None, values) == "PAP-447-add-worktree-support"
    # Other variables; unknown ones render empty; a slug falls back to the identifier.
    assert (
        render_branch(
            "{{agent.name}}/{{issue.identifier}}-{{nope}}",
            {"agent.name": "Bot", "issue.identifier": "A-1"},
        )
        == "Bot/A-1"
    )
    assert render_branch(None, {"issue.identifier": "A-2", "issue.title": "!!!"}) == "A-2-a-2"


def test_branch_names_are_sanitized_and_bounded() -> None:
    # Reference case 46 as changed by DECISIONS 5: nothing left -> clipyard-work.
    assert sanitize_branch("*** ???") == "clipyard-work"
    assert sanitize_branch("") == "clipyard-work"
    long = sanitize_branch("a" * 200)
    assert len(long) == 120
    assert sanitize_branch("  feat//x..y.lock/ .hidden -") == "feat/x.y/hidden"
    assert sanitize_branch("-" + "b" * 119 + "-c") == "b" * 119


def test_worktrees_live_under_clipyard_home_unless_configured(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert (
        worktree_parent(Strategy(), home=home, project_workspace_id="pw1")
        == home / "worktrees" / "pw1"
    )
    assert (
        worktree_parent(
            Strategy(worktree_parent_dir="trees"), home=home, project_workspace_id="pw1"
        )
        == home / "trees"
    )
    assert (
        worktree_parent(
            Strategy(worktree_parent_dir=str(tmp_path / "elsewhere")),
            home=home,
            project_workspace_id="p",
        )
        == tmp_path / "elsewhere"
    )


def test_a_worktree_parent_inside_a_project_checkout_is_refused(tmp_path: Path) -> None:
    checkout = tmp_path / "repo"
    checkout.mkdir()
    check_worktree_parent(tmp_path / "trees", [checkout])
    with pytest.raises(InvalidInputError, match="inside the project checkout") as refused:
        check_worktree_parent(checkout / ".worktrees", [checkout])
    assert refused.value.details["field"] == "workspaceStrategy.worktreeParentDir"
    with pytest.raises(InvalidInputError):
        check_worktree_parent(checkout, [checkout])
