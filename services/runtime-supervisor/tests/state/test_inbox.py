"""The inboxes build the supervisor's copies from the realizer's and the controller's real
contract events: targets with their effective runtime config, cwd, node and status; issues; runs;
and a finished run releases its leases in the same save."""

from __future__ import annotations

import pytest
from eventsourcing.persistence import IntegrityError, Tracking
from state_world import ACME, DB, OTHER, WEB, World, runtime_of

from contracts.workspace_config import (
    EgressRule,
    ExecutionWorkspaceConfig,
    ExecutionWorkspacePolicy,
    ManagedCheckout,
)
from contracts.workspace_events import IssueCommented, ProjectCreated, ProjectUpdated
from runtime_supervisor.application import RuntimeSupervisorApplication
from runtime_supervisor.domain import InvalidInputError, NotFoundError
from runtime_supervisor.inbox import apply_realizer_event


def test_a_realized_workspace_becomes_a_target_with_its_project_workspaces_runtime(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    pw = world.project_workspace(runtime_of(WEB, DB))
    issue = world.issue("ACME-7")
    ws = world.workspace(
        pw, issue, config=ExecutionWorkspaceConfig(runtime_provision_command="pnpm install")
    )
    target = world.target(ws=ws)
    assert target.kind == "execution_workspace"
    assert target.key == f"execution_workspace:{ws}"
    assert (target.company_id, target.cwd, target.node_id) == (ACME, "/worktrees/ACME-1", "local")
    assert (target.branch_name, target.base_ref) == ("ACME-1", "origin/main")
    assert target.project_workspace_id == pw
    assert target.project_workspace_cwd == "/repos/acme"
    # No config of its own: the project workspace's services are in force, inherited.
    assert target.own_runtime is None
    assert target.project_runtime == runtime_of(WEB, DB)
    assert target.effective_runtime == runtime_of(WEB, DB)
    assert target.inherited
    # The strategy's runtime provision command travels in the workspace's config.
    assert target.runtime_provision_command == "pnpm install"
    assert target.source_issue is not None
    assert (target.source_issue.identifier, target.source_issue.title) == (
        "ACME-7",
        "Work on ACME-7",
    )
    assert target.is_open
    assert target.label == f"execution workspace {ws}"


def test_a_workspace_config_of_its_own_overrides_the_project_workspaces(
    world: World,
) -> None:
    pw = world.project_workspace(runtime_of(WEB, DB))
    ws = world.workspace(pw)
    world.ws_config(ws, ExecutionWorkspaceConfig(workspace_runtime=runtime_of(DB)))
    target = world.target(ws=ws)
    assert target.own_runtime == runtime_of(DB)
    assert target.effective_runtime == runtime_of(DB)
    assert not target.inherited
    # The project workspace's runtime changes; the workspace keeps its own, then loses it.
    world.pw_runtime(pw, runtime_of(WEB))
    assert world.target(ws=ws).effective_runtime == runtime_of(DB)
    world.ws_config(ws, None)
    assert world.target(ws=ws).effective_runtime == runtime_of(WEB)


def test_project_workspace_targets_follow_their_checkout_and_deletion(world: World) -> None:
    pw = world.project_workspace(runtime_of(WEB), cwd=None)
    target = world.target(pw=pw)
    assert (target.kind, target.cwd, target.own_runtime) == (
        "project_workspace",
        None,
        runtime_of(WEB),
    )
    assert target.is_open
    world.pw_checkout(pw, ManagedCheckout(state="cloning", operation_id="op-1"))
    assert world.target(pw=pw).cwd is None
    world.pw_checkout(pw, ManagedCheckout(state="ready", path="/home/.clipyard/checkouts/acme"))
    assert world.target(pw=pw).cwd == "/home/.clipyard/checkouts/acme"
    world.pw_deleted(pw)
    with pytest.raises(NotFoundError, match="no project workspace"):
        world.target(pw=pw)


def test_lifecycle_events_open_and_close_the_target(world: World) -> None:
    ws = world.workspace(None)
    world.ws_status(ws, "active", "idle")
    assert world.target(ws=ws).status == "idle"
    assert world.target(ws=ws).is_open
    world.ws_archive(ws, 1)
    closing = world.target(ws=ws)
    assert closing.closing
    assert not closing.is_open
    assert closing.lifecycle_generation == 1
    world.ws_archived(ws, 1)
    archived = world.target(ws=ws)
    assert (archived.status, archived.closing, archived.is_open) == ("archived", False, False)
    assert archived.checkout_version == 0
    world.ws_reopened(ws, 2)
    reopened = world.target(ws=ws)
    assert (reopened.status, reopened.is_open, reopened.lifecycle_generation) == ("active", True, 2)
    # A reopen rebuilds the worktree, as does a reuse that rebuilt it; a plain reuse does not.
    assert reopened.checkout_version == 1
    world.ws_reused(ws, rebuilt=False)
    assert world.target(ws=ws).checkout_version == 1
    world.ws_reused(ws, rebuilt=True)
    assert world.target(ws=ws).checkout_version == 2


def test_targets_are_scoped_to_their_company(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    ws = world.workspace(None, company=OTHER)
    pw = world.project_workspace(company=OTHER)
    with pytest.raises(NotFoundError) as caught:
        app.target(ACME, workspace_id=ws)
    assert caught.value.details == {"workspaceId": ws}
    with pytest.raises(NotFoundError):
        app.target(ACME, project_workspace_id=pw)
    assert app.target(OTHER, workspace_id=ws).company_id == OTHER
    assert app.target(None, workspace_id=ws).company_id == OTHER  # the supervisor itself
    with pytest.raises(NotFoundError):
        app.target(ACME, workspace_id="never-realized")
    with pytest.raises(InvalidInputError):
        app.target(ACME)
    with pytest.raises(InvalidInputError):
        app.target(ACME, workspace_id=ws, project_workspace_id=pw)


def test_issue_statuses_and_deletions_are_copied(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    issue = world.issue(status="todo")
    assert app.issue_status(issue) == "todo"
    world.issue_status(issue, "todo", "done")
    assert app.issue_status(issue) == "done"
    brief = app.issue(ACME, issue)
    assert brief is not None
    assert brief.terminal
    assert app.issue(OTHER, issue) is None
    world.issue_deleted(issue)
    assert app.issue_status(issue) is None
    assert app.issue_status("unknown") is None


def test_a_run_started_before_its_workspace_existed_holds_the_one_it_leases(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    run = world.run_started(None, issue="issue-1")  # the issue had no workspace yet
    ws = world.workspace(None)
    assert app.runs_holding(ws) == []
    world.run_leased(run, ws)
    assert [r.id for r in app.runs_holding(ws)] == [run]
    assert app.run_status(run) == "running"
    copy = app.copy_of("run", run)
    assert copy is not None
    assert copy.get("issue_id") == "issue-1"  # the lease left it out: the started one's stays
    world.run_finished(run, "succeeded", ws)
    assert app.runs_holding(ws) == []


def test_runs_are_copied_and_a_finished_one_releases_its_leases_in_the_same_save(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    ws = world.workspace(None)
    target = world.target(ws=ws)
    run = world.run_started(ws)
    other = world.run_started(ws, agent="agent-2")
    assert app.run_status(run) == "running"
    assert [r.id for r in app.runs_holding(ws)] == [run, other]
    ephemeral = world.start(target, "preview", index=0, lifecycle="ephemeral")
    shared = world.start(target, "web", index=1)
    app.acquire_lease(ephemeral, run)
    app.acquire_lease(shared, run)
    app.acquire_lease(shared, other)
    position = app.position("controller")
    world.run_finished(run, "failed", ws)
    # One save holds the run's end, both releases and the position.
    assert app.position("controller") == position + 1
    assert app.run_status(run) == "failed"
    assert [r.id for r in app.runs_holding(ws)] == [other]
    [(run_id, releases)] = world.finished
    assert run_id == run
    assert {(record.id, unleased) for record, unleased in releases} == {
        (ephemeral, True),
        (shared, False),
    }
    assert app.service_record(None, shared).lease_run_ids == (other,)
    assert run not in app.services_by_run


def test_a_redelivered_position_is_refused_and_unknown_events_are_skipped(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    pw = world.project_workspace(runtime_of(WEB))
    # The inbox skips recorded positions before the handler; the store refuses them anyway.
    with pytest.raises(IntegrityError):
        app.note_copy("project_workspace", pw, ACME, {"name": "again"}, Tracking("realizer", 1))
    assert app.copy_of("project_workspace", pw).get("name") == "main"
    # An event the supervisor does not copy: the handler says so and saves nothing.
    comment = IssueCommented(**world.envelope("issue", "i-1"), comment="looks good")
    before = app.last_notification_id()
    assert not apply_realizer_event(app, comment, Tracking("realizer", 50))
    assert app.last_notification_id() == before
    # A fact that changes nothing saves only its position.
    tracking = world.positions["realizer"]
    world.pw_runtime(pw, runtime_of(WEB))
    assert app.last_notification_id() == before
    assert app.position("realizer") == tracking + 1
    assert app.copy_of("project_workspace", pw).version == 1


def test_facts_about_a_record_seen_late_still_make_a_copy(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    # The stream keeps 30 days: a status change may be the first fact the supervisor sees.
    world.issue_status("issue-from-long-ago", "todo", "in_progress")
    assert app.issue_status("issue-from-long-ago") == "in_progress"
    world.ws_status("ws-from-long-ago", "active", "idle")
    target = app.target(ACME, workspace_id="ws-from-long-ago")
    assert (target.status, target.cwd, target.is_open) == ("idle", None, True)


def test_a_projects_egress_allowlist_is_copied_and_follows_its_updates(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    rules = [EgressRule(host="registry.npmjs.org", port=443)]
    created = ProjectCreated(**world.envelope("project", "p-1"), name="Acme",
                             execution_workspace_policy=ExecutionWorkspacePolicy(
                                 egress_allowlist=rules))  # fmt: skip
    assert apply_realizer_event(app, created, Tracking("realizer", 60))
    copy = app.copy_of("project", "p-1")
    assert copy is not None
    assert copy.get("egress_allowlist") == [{"host": "registry.npmjs.org", "port": 443}]
    emptied = ProjectUpdated(**world.envelope("project", "p-1"), name="Acme",
                             execution_workspace_policy=ExecutionWorkspacePolicy())  # fmt: skip
    assert apply_realizer_event(app, emptied, Tracking("realizer", 61))
    assert app.copy_of("project", "p-1").get("egress_allowlist") == []
