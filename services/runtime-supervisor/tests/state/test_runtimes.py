"""A target's runtime as a whole: the desired state computed by the patch rule (case 52), lazy
runtime provisioning per checkout (DECISIONS 1), the runtime-control lease decided by the lease
rule (case 63), and the runtime state the gateway shows."""

from __future__ import annotations

from datetime import timedelta

import pytest
from state_world import ACME, DB, OTHER, WEB, World, runtime_of

from contracts.execution_views import RuntimeProvisioning
from contracts.workspace_config import ExecutionWorkspaceConfig
from runtime_supervisor.application import RuntimeSupervisorApplication
from runtime_supervisor.domain import LeaseConflictError, RuntimeTarget
from runtime_supervisor.domain.desired import desired_state_patch
from runtime_supervisor.domain.leases import LEASE_TTL, decide, owner_key


def test_the_desired_state_the_rule_computes_is_recorded_and_shown(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    target = world.target(ws=world.workspace(world.project_workspace(runtime_of(WEB, DB))))
    assert app.desired(target) == (None, {})
    # Case 52: A running, B manual; stop all → A stopped, B manual, aggregate manual.
    assert app.record_desired(target, "running", {"0": "running", "1": "manual"})
    desired, states = app.desired(target)
    patched = desired_state_patch([0, 1], desired, states, "stop", None)
    assert patched == ("manual", {"0": "stopped", "1": "manual"})
    assert app.record_desired(target, *patched)
    state = app.runtime_state(target)
    assert (state.desired_state, state.service_states) == (
        "manual",
        {"0": "stopped", "1": "manual"},
    )
    # Then start index 0 → A running, aggregate running.
    again = desired_state_patch([0, 1], *app.desired(target), "start", 0)
    assert app.record_desired(target, *again)
    assert app.desired(target) == ("running", {"0": "running", "1": "manual"})
    version = app.runtimes[target.key].version
    assert not app.record_desired(target, *again)  # unchanged: nothing recorded
    assert app.runtimes[target.key].version == version
    # The service view carries its index's desired state.
    world.start(target, "db", index=1)
    [brief] = app.runtime_state(target).runtime_services
    assert (brief.service_name, brief.desired_state) == ("db", "manual")


def test_summaries_count_what_the_runtime_state_shows_per_workspace(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    pw = world.project_workspace(runtime_of(WEB, DB))
    busy = world.target(ws=world.workspace(pw))
    world.start(busy, "web", index=0)
    world.start(busy, "db", index=1, run=False)  # starting: shown, not running
    quiet = world.target(ws=world.workspace(pw))
    ended = world.start(quiet, "web", index=0)
    world.clock.advance(1)
    app.mark_stopped(ended, stop_reason="manual")
    idle = world.target(ws=world.workspace(pw))
    foreign = world.workspace(None, company=OTHER)
    ids = [
        idle.execution_workspace_id,
        busy.execution_workspace_id,
        "no-such-workspace",
        foreign,
        quiet.execution_workspace_id,
        busy.execution_workspace_id,
    ]
    found = app.runtime_summaries(ACME, [i or "" for i in ids])
    got = [(s.workspace_id, s.running, s.total) for s in found.items]
    assert got == [
        (idle.execution_workspace_id, 0, 0),
        (busy.execution_workspace_id, 1, 2),
        (quiet.execution_workspace_id, 0, 1),
    ]
    # The same numbers as the runtime state the detail shows.
    for target, (_, running, total) in zip((idle, busy, quiet), got, strict=True):
        services = app.runtime_state(target).runtime_services
        assert (running, total) == (
            sum(1 for one in services if one.status == "running"),
            len(services),
        )
    # Another company sees only its own; an operator without a company sees every one.
    assert [s.workspace_id for s in app.runtime_summaries(OTHER, ids[:4]).items] == [foreign]
    assert len(app.runtime_summaries(None, ids).items) == 4


def _provisioned(world: World) -> RuntimeTarget:
    config = ExecutionWorkspaceConfig(runtime_provision_command="pnpm install")
    return world.target(ws=world.workspace(None, config=config))


def test_runtime_provisioning_runs_once_per_checkout(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    plain = world.target(ws=world.workspace(None))
    assert app.runtime_state(plain).runtime_provisioning == RuntimeProvisioning(state="none")
    assert not app.needs_provisioning(plain)
    target = _provisioned(world)
    assert app.runtime_state(target).runtime_provisioning == RuntimeProvisioning(state="deferred")
    assert app.needs_provisioning(target)
    started_at = world.clock.now
    view = app.provisioning_started(target, operation_id="op-1", command="pnpm install")
    assert view == RuntimeProvisioning(state="deferred", at=started_at, operation_id="op-1")
    world.clock.advance(3)
    view = app.provisioning_failed(target, operation_id="op-1", error="exit 1")
    assert view == RuntimeProvisioning(state="failed", at=world.clock.now, operation_id="op-1")
    assert app.needs_provisioning(target)  # the next start runs it again
    app.provisioning_started(target, operation_id="op-2", command="pnpm install")
    world.clock.advance(3)
    view = app.provisioning_succeeded(target, operation_id="op-2")
    assert view == RuntimeProvisioning(state="provisioned", at=world.clock.now, operation_id="op-2")
    assert not app.needs_provisioning(target)
    assert app.provisioning(target).checkout_version == 0  # type: ignore[union-attr]
    # A plain reuse keeps it; a rebuilt worktree needs it again (DECISIONS 1).
    assert target.execution_workspace_id is not None
    world.ws_reused(target.execution_workspace_id, rebuilt=False)
    assert not app.needs_provisioning(world.target(ws=target.execution_workspace_id))
    world.ws_reused(target.execution_workspace_id, rebuilt=True)
    rebuilt = world.target(ws=target.execution_workspace_id)
    assert app.needs_provisioning(rebuilt)
    assert app.runtime_state(rebuilt).runtime_provisioning.state == "deferred"


def test_the_control_lease_records_what_the_rule_decides(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    # Case 63 at the state level: issue A's run holds the lease; issue B's run is refused until A
    # is done, then reclaims it; a board actor bypasses.
    ws = world.workspace(None)
    issue_a, issue_b = world.issue("ACME-1"), world.issue("ACME-2")
    run_a, run_b = world.run_started(ws, issue_a), world.run_started(ws, issue_b, "agent-2")
    target = world.target(ws=ws)

    def ask(issue: str, run: str, agent: str, action: str = "start") -> object:
        return decide(
            app.control_lease(target),
            owner_key("agent", issue, run, agent),
            issue_id=issue,
            run_id=run,
            agent_id=agent,
            action=action,
            now=world.clock.now,
            issue_status=app.issue_status,
            run_status=app.run_status,
            execution_workspace_id=ws,
        )

    claimed = app.claim_control_lease(target, ask(issue_a, run_a, "agent-1"))  # type: ignore[arg-type]
    assert claimed is not None
    assert (claimed.owner_key, claimed.owner_run_id, claimed.last_action) == (
        f"issue:{issue_a}",
        run_a,
        "start",
    )
    assert claimed.expires_at == world.clock.now + LEASE_TTL
    world.clock.advance(60)
    renewed = app.claim_control_lease(target, ask(issue_a, run_a, "agent-1", "stop"))  # type: ignore[arg-type]
    assert renewed is not None
    assert (renewed.claimed_at, renewed.renewed_at) == (claimed.claimed_at, world.clock.now)
    assert renewed.last_action == "stop"
    with pytest.raises(LeaseConflictError) as conflict:
        app.claim_control_lease(target, ask(issue_b, run_b, "agent-2"))  # type: ignore[arg-type]
    assert (conflict.value.code, conflict.value.status) == ("workspace_runtime_lease_conflict", 409)
    assert conflict.value.details["ownerKey"] == f"issue:{issue_a}"
    assert app.control_lease(target) == renewed  # a refusal records nothing
    world.issue_status(issue_a, "in_progress", "done")
    reclaimed = app.claim_control_lease(target, ask(issue_b, run_b, "agent-2"))  # type: ignore[arg-type]
    assert reclaimed is not None
    assert reclaimed.owner_key == f"issue:{issue_b}"
    lease_state = app.runtimes[target.key].control_lease
    assert lease_state is not None
    assert lease_state["reclaimed_from"] == {
        "ownerKey": f"issue:{issue_a}",
        "reason": "owner_issue_terminal",
    }
    # A board actor bypasses: nothing is recorded.
    version = app.runtimes[target.key].version
    board = decide(
        app.control_lease(target), owner_key("board", None, None, None), issue_id=None,
        run_id=None, agent_id=None, action="stop", now=world.clock.now,
        issue_status=app.issue_status, run_status=app.run_status,
    )  # fmt: skip
    assert app.claim_control_lease(target, board) == reclaimed
    assert app.runtimes[target.key].version == version
    # Release: another owner's key releases nothing; the owner's (or a forced one) does.
    assert not app.release_control_lease(target, f"issue:{issue_a}")
    assert app.release_control_lease(target, f"issue:{issue_b}")
    assert app.control_lease(target) is None
    assert not app.release_control_lease(target)
    app.claim_control_lease(target, ask(issue_b, run_b, "agent-2"))  # type: ignore[arg-type]
    assert app.release_control_lease(target)  # forced (an archive)
    assert app.control_lease(target) is None


def test_an_expired_lease_is_reclaimed(app: RuntimeSupervisorApplication, world: World) -> None:
    ws = world.workspace(None)
    target = world.target(ws=ws)
    first = decide(None, "agent:agent-1", issue_id=None, run_id=None, agent_id="agent-1",
                   action="start", now=world.clock.now, issue_status=app.issue_status,
                   run_status=app.run_status)  # fmt: skip
    app.claim_control_lease(target, first)
    world.clock.advance((LEASE_TTL + timedelta(seconds=1)).total_seconds())
    later = decide(app.control_lease(target), "agent:agent-2", issue_id=None, run_id=None,
                   agent_id="agent-2", action="start", now=world.clock.now,
                   issue_status=app.issue_status, run_status=app.run_status)  # fmt: skip
    assert later.outcome == "reclaimed"
    lease = app.claim_control_lease(target, later)
    assert lease is not None
    assert lease.owner_key == "agent:agent-2"
    assert app.target(ACME, workspace_id=ws).key == target.key
