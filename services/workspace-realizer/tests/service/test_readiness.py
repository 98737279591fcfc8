"""Close readiness (reference §5.8 and case 61; DECISIONS 3: a dirty tree warns, never blocks)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from workspace_realizer.adapters.ports import DeliveryFacts, GitInspection
from workspace_realizer.domain.host.readiness import (
    CloseContext,
    LinkedIssueFacts,
    close_readiness,
    needs_rescue,
)


def inspection(**kw: Any) -> GitInspection:
    delivery = DeliveryFacts(
        merged_by_ancestry=False,
        merged_by_squash=False,
        commits_ahead=kw.get("ahead", 0),
        head_sha="h",
    )
    values = {"exists": True, "readable": True, "branch": "ACME-1-x", "head_sha": "h", "dirty_count": 0,
              "untracked_count": 0, "ahead": 0, "behind": 0, "delivery": delivery} | kw  # fmt: skip
    return GitInspection(**values)


def context(**kw: Any) -> CloseContext:
    values = {"workspace_id": "w1", "mode": "isolated_workspace", "is_worktree": True, "path": "/t/w1",
              "branch_name": "ACME-1-x", "base_ref": "origin/main", "branch_created": True,
              "next_generation": 1, "inspection": inspection(), "linked": [],
              "delivery_state": "merged_by_ancestry", "commits_ahead": 0} | kw  # fmt: skip
    return CloseContext(**values)


OPEN = LinkedIssueFacts("i1", "ACME-1", "x", "in_progress", False)
DONE = LinkedIssueFacts("i2", "ACME-2", "y", "done", True)


def test_a_clean_delivered_worktree_is_ready_and_plans_everything() -> None:
    verdict = close_readiness(
        context(linked=[DONE], commands=[("teardown_command", "Teardown", "make down")])
    )
    assert verdict.state == "ready"
    kinds = [a["kind"] for a in verdict.planned_actions]
    assert kinds == [
        "archive_record",
        "stop_runtime_services",
        "teardown_command",
        "git_worktree_remove",
        "git_branch_delete",
    ]
    assert (verdict.needs_rescue, verdict.delete_branch) == (False, True)


def test_open_linked_issues_block_only_non_shared_workspaces() -> None:
    blocked = close_readiness(context(linked=[OPEN, DONE]))
    assert blocked.state == "blocked"
    assert blocked.blocking_reasons == [
        "This workspace is still linked to 1 open issue(s): ACME-1."
    ]
    shared = close_readiness(
        context(mode="shared_workspace", is_worktree=False, inspection=None, linked=[OPEN])
    )
    assert shared.state == "ready_with_warnings"
    assert any("detached" in w for w in shared.warnings)
    assert [a["kind"] for a in shared.planned_actions] == [
        "archive_record",
        "stop_runtime_services",
    ]


def test_unreadable_git_state_blocks() -> None:
    verdict = close_readiness(
        context(inspection=inspection(readable=False, error="fatal: bad object"))
    )
    assert verdict.state == "blocked"
    assert "could not be verified (fatal: bad object)" in verdict.blocking_reasons[0]


def test_a_dirty_tree_and_undelivered_commits_warn_and_plan_a_rescue() -> None:
    # Reference case 40 differs here: an untracked file alone does not block.
    dirty = close_readiness(context(inspection=inspection(untracked_count=1, dirty_count=2)))
    assert dirty.state == "ready_with_warnings"
    assert any("1 untracked file(s)" in w for w in dirty.warnings)
    assert any("2 modified tracked file(s)" in w for w in dirty.warnings)
    assert "write_rescue_ref" in [a["kind"] for a in dirty.planned_actions]
    ahead = context(inspection=inspection(ahead=2), delivery_state="unmerged", commits_ahead=2)
    verdict = close_readiness(ahead)
    assert any("2 commit(s) ahead of origin/main and is not merged" in w for w in verdict.warnings)
    assert (verdict.needs_rescue, verdict.delete_branch) == (True, False)
    assert "not delivered" in (verdict.branch_kept_reason or "")
    # Delivered through a PR: no "not merged" warning, and the branch may go.
    via_pr = close_readiness(replace(ahead, delivery_state="merged_via_pr"))
    assert not any("not merged" in w for w in via_pr.warnings)
    assert via_pr.delete_branch


def test_branches_clipyard_did_not_create_are_kept() -> None:
    verdict = close_readiness(context(branch_created=False))
    assert not verdict.delete_branch
    assert verdict.branch_kept_reason == "Clipyard did not create this branch"


def test_a_missing_worktree_warns_and_removes_nothing() -> None:
    verdict = close_readiness(context(inspection=inspection(exists=False)))
    assert any("no longer exists" in w for w in verdict.warnings)
    assert "git_worktree_remove" not in [a["kind"] for a in verdict.planned_actions]
    assert not needs_rescue(inspection(exists=False), "unmerged")
