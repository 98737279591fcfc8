"""Runtime-control lease decisions (reference §6.8, §3.5; case 63 as a pure decision)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from runtime_supervisor.domain.leases import (
    LEASE_TTL,
    ControlLease,
    LeaseDecision,
    decide,
    owner_key,
)

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


class World:
    """Issue and run statuses as the supervisor's read models would answer."""

    def __init__(self) -> None:
        self.issues: dict[str, str] = {}
        self.runs: dict[str, str] = {}

    def request(
        self,
        current: ControlLease | None,
        *,
        actor: str = "agent",
        issue: str | None = None,
        run: str | None = None,
        agent: str | None = "ag-1",
        action: str = "start",
        now: datetime = T0,
    ) -> LeaseDecision:
        return decide(
            current,
            owner_key(actor, issue, run, agent),
            issue_id=issue,
            run_id=run,
            agent_id=agent,
            action=action,
            now=now,
            issue_status=self.issues.get,
            run_status=self.runs.get,
            execution_workspace_id="ew-1",
        )


def test_owner_key_prefers_issue_then_run_then_agent() -> None:
    assert owner_key("agent", "i-1", "r-1", "a-1") == "issue:i-1"
    assert owner_key("agent", None, "r-1", "a-1") == "run:r-1"
    assert owner_key("agent", None, None, "a-1") == "agent:a-1"
    assert owner_key("agent", None, None, None) is None
    for actor in ("board", "admin", "system"):
        assert owner_key(actor, "i-1", "r-1", "a-1") is None


def test_case_63_conflict_then_reclaim_when_the_owner_issue_is_done() -> None:
    world = World()
    world.issues.update({"A": "in_progress", "B": "todo"})
    world.runs.update({"rA": "running", "rB": "running"})
    first = world.request(None, issue="A", run="rA", agent="ag-a")
    assert first.outcome == "claimed"
    assert first.lease is not None
    assert (first.lease.owner_key, first.lease.expires_at) == ("issue:A", T0 + LEASE_TTL)

    later = T0 + timedelta(minutes=5)
    refused = world.request(first.lease, issue="B", run="rB", agent="ag-b", now=later)
    assert refused.outcome == "conflict"
    assert refused.lease is None
    assert refused.conflict is not None
    assert {k: v for k, v in refused.conflict.details().items() if k != "remediation"} == {
        "executionWorkspaceId": "ew-1",
        "requestedAction": "start",
        "requestedOwnerKey": "issue:B",
        "ownerKey": "issue:A",
        "ownerIssueId": "A",
        "ownerRunId": "rA",
        "ownerAgentId": "ag-a",
        "lastAction": "start",
        "claimedAt": T0,
        "renewedAt": T0,
        "expiresAt": T0 + LEASE_TTL,
    }
    assert refused.conflict.details()["remediation"].startswith("Do not retry")
    assert "issue:A" in refused.conflict.details()["remediation"]
    assert "issue:A" in refused.message

    world.issues["A"] = "done"
    taken = world.request(first.lease, issue="B", run="rB", agent="ag-b", now=later)
    assert taken.outcome == "reclaimed"
    assert taken.reclaimed_from == {"ownerKey": "issue:A", "reason": "owner_issue_terminal"}
    assert taken.lease is not None
    assert (taken.lease.owner_key, taken.lease.claimed_at) == ("issue:B", later)

    assert world.request(taken.lease, actor="board", agent=None).outcome == "bypassed"


def test_board_actors_bypass_even_a_live_lease() -> None:
    world = World()
    world.issues["A"] = "in_progress"
    lease = world.request(None, issue="A").lease
    decision = world.request(lease, actor="board", agent=None, action="stop")
    assert (decision.outcome, decision.lease, decision.conflict) == ("bypassed", None, None)
    assert world.request(lease, issue=None, run=None, agent=None).outcome == "bypassed"


def test_the_same_owner_renews_and_keeps_its_claim_time() -> None:
    world = World()
    world.issues["A"] = "in_progress"
    lease = world.request(None, issue="A", run="r1").lease
    later = T0 + timedelta(minutes=40)  # expired, but the same owner simply renews
    renewed = world.request(lease, issue="A", run="r2", action="stop", now=later)
    assert renewed.outcome == "renewed"
    assert renewed.lease == ControlLease(
        owner_key="issue:A",
        owner_issue_id="A",
        owner_run_id="r2",
        owner_agent_id="ag-1",
        last_action="stop",
        claimed_at=T0,
        renewed_at=later,
        expires_at=later + LEASE_TTL,
    )


@pytest.mark.parametrize(
    ("owner", "issues", "runs", "minutes", "reason"),
    [
        ({"issue": "A", "run": "r1"}, {"A": "in_progress"}, {"r1": "running"}, 30, "expired"),
        ({"issue": "A"}, {}, {}, 1, "owner_issue_missing"),
        ({"issue": "A"}, {"A": "cancelled"}, {}, 1, "owner_issue_terminal"),
        ({"run": "r1"}, {}, {"r1": "timed_out"}, 1, "owner_run_terminal"),
        ({"run": "r1"}, {}, {}, 1, "owner_run_missing"),
        ({"agent": "ag-9"}, {}, {}, 31, "expired"),
    ],
)
def test_stale_owners_are_reclaimed(
    owner: dict[str, Any], issues: dict[str, str], runs: dict[str, str], minutes: int, reason: str
) -> None:
    world = World()
    world.issues.update(issues)
    world.runs.update(runs)
    lease = world.request(None, **owner).lease
    decision = world.request(lease, agent="ag-2", now=T0 + timedelta(minutes=minutes))
    assert decision.outcome == "reclaimed"
    assert decision.lease is not None
    assert decision.lease.owner_key == "agent:ag-2"
    assert decision.reclaimed_from is not None
    assert decision.reclaimed_from["reason"] == reason


@pytest.mark.parametrize(
    ("owner", "issues", "runs"),
    [
        ({"issue": "A", "run": "r1"}, {"A": "blocked"}, {"r1": "succeeded"}),
        ({"issue": "A"}, {"A": "ready_for_qa"}, {}),
        ({"run": "r1"}, {}, {"r1": "running"}),
        ({"run": "r1"}, {}, {"r1": "queued"}),
        ({"agent": "ag-9"}, {}, {}),
    ],
)
def test_live_owners_conflict(
    owner: dict[str, Any], issues: dict[str, str], runs: dict[str, str]
) -> None:
    world = World()
    world.issues.update(issues)
    world.runs.update(runs)
    lease = world.request(None, **owner).lease
    decision = world.request(lease, agent="ag-2", now=T0 + timedelta(minutes=29, seconds=59))
    assert decision.outcome == "conflict"
    assert decision.reclaimed_from is None
