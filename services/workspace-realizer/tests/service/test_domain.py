"""Aggregate narratives: each step one command, every refusal asserted."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from workspace_realizer.domain import (
    CompanyCopy,
    FenceError,
    InvalidInputError,
    Issue,
    Project,
    ProjectWorkspace,
    StateConflictError,
)
from workspace_realizer.domain.errors import (
    NotReopenableError,
    PathRequiredError,
    ReopenPendingError,
)
from workspace_realizer.domain.host import ExecutionWorkspace
from workspace_realizer.domain.host.records import ArchiveOutcome

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def workspace(**kw: Any) -> ExecutionWorkspace:
    values = {"workspace_id": str(uuid.uuid4()), "company_id": "c", "project_id": "p",
              "project_workspace_id": "pw", "source_issue_id": "i", "mode": "isolated_workspace",
              "strategy_type": "git_worktree", "provider_type": "git_worktree", "provider_ref": "/w",
              "name": "b", "cwd": "/w", "repo_url": None, "base_ref": "origin/main",
              "base_ref_sha": "s", "branch_name": "b", "branch_created": True,
              "created_worktree": True, "node_id": "local", "config": {}, "operation_id": None,
              "warnings": [], "at": T0} | kw  # fmt: skip
    return ExecutionWorkspace(**values)


OUTCOME = {"trigger": "manual", "cleanup_reason": None, "rescue_ref": None, "branch_deleted": True,
           "branch_kept_reason": None, "worktree_removed": True, "runtime_services_stopped": 0,
           "detached_issue_ids": [], "cleanup_warnings": [], "operation_id": None}  # fmt: skip


def test_company_copies_number_issues() -> None:
    company = CompanyCopy(company_id="c", name="Acme", issue_prefix="ACME")
    assert company.id == CompanyCopy.create_id("c")
    assert [company.next_identifier(), company.next_identifier()] == ["ACME-1", "ACME-2"]
    # An explicit identifier of the prefix moves the counter past it; others do not.
    company.note_identifier("ACME-10")
    company.note_identifier("OTHER-99")
    company.note_identifier("ACME-3")
    assert company.next_identifier() == "ACME-11"


def test_a_project_is_revised_as_a_whole_record() -> None:
    project = Project.create(company_id="c", name=" Web ", policy=None)
    assert project.name == "Web"
    # One event for both changes, naming them; none when nothing changes.
    project.revise(name="API", policy={"defaultMode": "isolated_workspace"})
    revised = project.pending_events[-1]
    assert (revised.name, revised.changed_fields) == ("API", ["name", "executionWorkspacePolicy"])
    count = len(project.pending_events)
    project.revise(name="API")
    assert len(project.pending_events) == count
    with pytest.raises(InvalidInputError, match="empty"):
        project.revise(name="  ")
    project.delete()
    project.delete()
    assert project.deleted
    assert len(project.pending_events) == count + 1


def test_a_project_workspace_needs_a_path_or_a_repository() -> None:
    with pytest.raises(PathRequiredError) as missing:
        ProjectWorkspace.create(
            company_id="c", project_id="p", fields={"name": "x"}, runtime_config=None
        )
    assert missing.value.status == 422
    assert missing.value.code == "workspace_path_required"
    with pytest.raises(InvalidInputError, match="absolute"):
        ProjectWorkspace.create(
            company_id="c", project_id="p", fields={"name": "x", "cwd": "rel"}, runtime_config=None
        )
    with pytest.raises(InvalidInputError, match=r"runtimeConfig\.services"):
        ProjectWorkspace.create(company_id="c", project_id="p", fields={"name": "x", "cwd": "/r"},
                                runtime_config={"services": [{"name": "w"}]})  # fmt: skip
    repo = ProjectWorkspace.create(company_id="c", project_id="p",
                                   fields={"name": "x", "repo_url": "https://github.com/a/b"},
                                   runtime_config={"jobs": [{"name": "hello", "command": "echo"}]})  # fmt: skip
    assert repo.repo_only
    assert repo.checkout is None
    assert repo.commands[0]["id"] == "job:hello"
    # Its managed clone: started, failed, started again, ready.
    repo.start_checkout("/h/checkouts/x", "op1")
    repo.fail_checkout("auth failed")
    assert (repo.checkout_state, repo.checkout_error) == ("failed", "auth failed")
    repo.start_checkout("/h/checkouts/x", "op2")
    repo.finish_checkout("/h/checkouts/x", "sha", "main")
    assert (repo.checkout_state, repo.checkout, repo.checkout_error) == (
        "ready",
        "/h/checkouts/x",
        None,
    )
    # A move to a local checkout forgets the managed one; removing both sources is refused.
    assert repo.revise({"cwd": "/src/b"}) == ["cwd"]
    assert repo.checkout_state == "none"
    assert repo.checkout == "/src/b"
    with pytest.raises(StateConflictError):
        repo.start_checkout("/h/checkouts/y", None)
    with pytest.raises(PathRequiredError):
        repo.revise({"cwd": None, "repo_url": None})
    # Clearing the only source it has conflicts with what it is (the same body would do on a
    # workspace that has the other): 409, naming what to set.
    assert repo.revise({"repo_url": None}) == ["repoUrl"]
    with pytest.raises(StateConflictError, match="it has no repoUrl") as conflict:
        repo.revise({"cwd": None})
    assert conflict.value.details == {"field": "cwd"}
    assert repo.cwd == "/src/b"


def test_an_issue_narrative() -> None:
    issue = Issue.create(company_id="c", project_id="p", identifier="ACME-1", title="Fix it", at=T0)
    assert (issue.status, issue.terminal) == ("backlog", False)
    assert issue.revise({"title": "Fix it now", "priority": "high"}) == ["title", "priority"]
    with pytest.raises(InvalidInputError, match="own parent"):
        issue.revise({"parent_id": str(issue.id)})
    with pytest.raises(InvalidInputError, match=r"executionWorkspaceSettings\.mode"):
        issue.revise({"settings": {"mode": "sideways"}})
    with pytest.raises(InvalidInputError, match=r"executionWorkspaceSettings\.extra"):
        issue.revise({"settings": {"extra": 1}})
    with pytest.raises(InvalidInputError, match="status"):
        issue.change_status("finished", T0)
    issue.change_status("done", T0 + timedelta(hours=1))
    assert issue.terminal
    assert issue.status_since == T0 + timedelta(hours=1)
    issue.assign("agent-1")
    issue.link_workspace("w1")
    issue.unlink_workspace("w2")
    assert issue.execution_workspace_id == "w1"
    issue.unlink_workspace("w1")
    assert issue.execution_workspace_id is None
    with pytest.raises(InvalidInputError, match="Work product type"):
        issue.add_work_product({"type": "tarball"})
    names = [type(e).__name__ for e in issue.pending_events]
    assert names == [
        "Created",
        "Revised",
        "StatusChanged",
        "Assigned",
        "WorkspaceLinked",
        "WorkspaceLinked",
    ]


def test_the_archive_saga_is_fenced_by_generation() -> None:
    ws = workspace()
    ws.change_status("idle", T0)
    with pytest.raises(InvalidInputError):
        ws.change_status("archived", T0)
    # Archive starts at generation 1; nothing else may start meanwhile.
    generation = ws.start_archive(T0)
    assert (generation, ws.closing, ws.status) == (1, True, "idle")
    with pytest.raises(StateConflictError, match="being archived"):
        ws.start_archive(T0)
    with pytest.raises(StateConflictError, match="being archived"):
        ws.reuse(T0, issue_id="i", rebuilt=False, warnings=[])
    with pytest.raises(NotReopenableError):
        ws.check_reopenable()
    # A step of another generation is skipped.
    with pytest.raises(FenceError):
        ws.finish_archive(2, T0, ArchiveOutcome(**OUTCOME))
    ws.fail_cleanup(
        1,
        T0,
        error="worktree still registered",
        rescue_ref={"ref": "r", "sha": "s"},
        operation_id=None,
    )
    assert (ws.status, ws.cleanup_reason, ws.closing) == (
        "cleanup_failed",
        "worktree still registered",
        False,
    )
    # A retry archives at generation 2; the rescue refs accumulate.
    generation = ws.start_archive(T0, expected_generation=1)
    ws.finish_archive(
        generation, T0, ArchiveOutcome(**OUTCOME | {"rescue_ref": {"ref": "r2", "sha": "s2"}})
    )
    assert (ws.status, ws.lifecycle_generation, len(ws.rescue_refs)) == ("archived", 2, 2)
    with pytest.raises(StateConflictError, match="archived already"):
        ws.start_archive(T0)


def test_reopen_fences_archive_for_five_minutes() -> None:
    ws = workspace()
    ws.finish_archive(ws.start_archive(T0), T0, ArchiveOutcome(**OUTCOME))
    with pytest.raises(FenceError):
        ws.check_reopenable(expected_generation=0)
    ws.reopen(ws.check_reopenable(), T0, restored_from=None, operation_id=None)
    assert (ws.status, ws.lifecycle_generation, ws.closed_at) == ("active", 2, None)
    # Reference case 41: archive under the fence is refused.
    with pytest.raises(ReopenPendingError):
        ws.start_archive(T0 + timedelta(minutes=4))
    # A realization consumes the reopen; the fence also expires by itself.
    assert not ws.reopen_fenced(T0 + timedelta(minutes=6))
    ws.reuse(T0, issue_id="i", rebuilt=False, warnings=[])
    assert ws.reopened_at is None
    assert ws.start_archive(T0) == 3


def test_a_failed_reopen_stays_closed() -> None:
    ws = workspace()
    ws.finish_archive(ws.start_archive(T0), T0, ArchiveOutcome(**OUTCOME))
    ws.fail_reopen(1, T0, error="branch gone", operation_id=None)
    assert (ws.status, ws.cleanup_reason, ws.lifecycle_generation) == (
        "archived",
        "reopen_failed",
        2,
    )
    with pytest.raises(FenceError):
        ws.reopen(1, T0, restored_from=None, operation_id=None)
    with pytest.raises(NotReopenableError):
        workspace().check_reopenable()
