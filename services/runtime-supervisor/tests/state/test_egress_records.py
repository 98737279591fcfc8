"""What a namespace's gate counted, recorded (docs/design/isolation.md): each distinct (host, port,
verdict) of a period is observed once with its count then; an ended period's grown counts are
tallied once; the same counts again record nothing; the records are listed per workspace and
published as ``egress.observed.v1`` / ``egress.tallied.v1`` with the host, port, verdict, count
and workspace ids, stamped with the gate's cause and the period's run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from state_world import ACME, World

from contracts.egress_events import EgressObserved, EgressTallied
from runtime_supervisor.application import RuntimeSupervisorApplication
from runtime_supervisor.orchestration.context import as_system
from runtime_supervisor.publishing import to_contract
from runtime_supervisor.usecases.egress import EgressOwner, EgressPeriod, Seen

NAMESPACE = "cy1-0a1b2c"
T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _seen(host: str, port: int, verdict: str, count: int, minutes: int = 1) -> Seen:
    return Seen(host=host, port=port, verdict=verdict, count=count, first_at=T0,  # type: ignore[arg-type]
                last_at=T0 + timedelta(minutes=minutes))  # fmt: skip


def _note(
    app: RuntimeSupervisorApplication, owner: EgressOwner, run: str | None, ended: bool,
    *seen: Seen, key: str | None = None,
) -> int:  # fmt: skip
    """As the supervisor's watch records one period of the gate's tally."""
    period = EgressPeriod(key=key or run or "idle:2026-11-29T11:00:00+00:00", run_id=run,
                          ended=ended, seen=seen)  # fmt: skip
    with as_system(f"the egress gate of {NAMESPACE} counted it", run):
        return app.note_egress(NAMESPACE, owner, period)


def _events(app: RuntimeSupervisorApplication) -> list[Any]:
    return [app.mapper.to_domain_event(n) for n in app.recorder.select_notifications(1, 1000)]


def _owner(world: World) -> tuple[EgressOwner, str, str]:
    pw = world.project_workspace()
    ws = world.workspace(pw)
    owner = EgressOwner(company_id=ACME, target_key=world.target(ws=ws).key,
                        execution_workspace_id=ws, project_workspace_id=pw,
                        project_id="p-1")  # fmt: skip
    return owner, ws, pw


def test_new_tuples_are_observed_once_and_ended_periods_tally_what_grew(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    owner, ws, pw = _owner(world)
    before = app.last_notification_id()
    github = _seen("github.com", 443, "allowed", 3)
    denied = _seen("example.com", 53, "denied", 1)
    assert _note(app, owner, "r-1", False, github, denied) == 2
    records = [app.egress[i] for i in app.egress_by_target[owner.target_key]]
    assert [(r.host, r.port, r.verdict, r.count, r.final) for r in records] == [
        ("github.com", 443, "allowed", 3, False),
        ("example.com", 53, "denied", 1, False),
    ]
    assert {(r.period, r.namespace, r.execution_workspace_id) for r in records} == {
        ("r-1", NAMESPACE, ws)
    }

    # The same counts again, or grown while the period is open: nothing new.
    assert _note(app, owner, "r-1", False, github, denied) == 0
    assert _note(app, owner, "r-1", False, _seen("github.com", 443, "allowed", 7), denied) == 0
    assert app.last_notification_id() == before + 2, "two Observed events, nothing else"

    # The period ended: the grown count is tallied once; an unchanged one is not.
    final = _seen("github.com", 443, "allowed", 9, minutes=5)
    assert _note(app, owner, "r-1", True, final, denied) == 1
    assert _note(app, owner, "r-1", True, final, denied) == 0, "idempotent"
    assert _note(app, owner, "r-1", True, _seen("github.com", 443, "allowed", 4), denied) == 0
    assert app.last_notification_id() == before + 3
    tallied = app.egress[app.egress_by_target[owner.target_key][0]]
    assert (tallied.count, tallied.final, tallied.last_at) == (9, True, final.last_at)

    # A tuple first seen in an ended period is observed with its final count, not tallied.
    late = _seen("pypi.org", 443, "denied", 4)
    assert _note(app, owner, "r-1", True, final, denied, late) == 1
    assert len(app.egress_by_target[owner.target_key]) == 3

    events = _events(app)[-4:]
    assert [type(e).__qualname__ for e in events] == [
        "EgressSeen.Observed",
        "EgressSeen.Observed",
        "EgressSeen.Tallied",
        "EgressSeen.Observed",
    ]
    contracts = [to_contract(e) for e in events]
    observed, tally = contracts[0], contracts[2]
    assert isinstance(observed, EgressObserved)
    assert isinstance(tally, EgressTallied)
    assert type(observed).__struct_config__.tag == "egress.observed.v1"
    assert type(tally).__struct_config__.tag == "egress.tallied.v1"
    assert (observed.host, observed.port, observed.verdict, observed.count) == (
        "github.com", 443, "allowed", 3,
    )  # fmt: skip
    assert (tally.host, tally.port, tally.verdict, tally.count) == ("github.com", 443, "allowed", 9)
    for contract in contracts:
        assert contract is not None
        assert contract.company_id == ACME
        assert (contract.execution_workspace_id, contract.project_workspace_id) == (ws, pw)
        assert contract.aggregate == "egress"
        assert contract.run_id == "r-1", "stamped with the period's run"
        assert (contract.actor.type, contract.actor.id) == ("system", "runtime-supervisor")
    assert observed.aggregate_id == tally.aggregate_id, "one record, observed then tallied"
    assert (tally.aggregate_version, tally.first_at, tally.last_at) == (2, T0, final.last_at)


def test_periods_and_namespaces_keep_their_own_records(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    owner, _ws, _pw = _owner(world)
    github = _seen("github.com", 443, "allowed", 1)
    assert _note(app, owner, None, False, github) == 1
    assert _note(app, owner, "r-1", False, github) == 1, "another period, another record"
    assert _note(app, owner, None, False, github, key="idle:2026-11-29T13:00:00+00:00") == 1
    with as_system("the egress gate of another namespace counted it"):
        other = EgressPeriod(key="r-1", run_id="r-1", ended=False, seen=(github,))
        assert app.note_egress("cy1-ffffff", owner, other) == 1
    assert len(app.egress_by_target[owner.target_key]) == 4
    idle = app.egress[app.egress_by_target[owner.target_key][0]]
    contract = to_contract(_events(app)[-4])
    assert isinstance(contract, EgressObserved)
    assert (idle.period, contract.run_id) == ("idle:2026-11-29T11:00:00+00:00", None)


def test_a_namespace_of_no_workspace_is_recorded_but_listed_under_none(
    app: RuntimeSupervisorApplication,
) -> None:
    owner = EgressOwner(company_id=ACME)
    assert _note(app, owner, "r-9", False, _seen("github.com", 443, "denied", 2)) == 1
    assert app.egress_by_target == {}
    [record] = app.egress.values()
    contract = to_contract(_events(app)[-1])
    assert isinstance(contract, EgressObserved)
    assert (contract.execution_workspace_id, contract.project_workspace_id) == (None, None)
    assert (record.company_id, contract.company_id, contract.count) == (ACME, ACME, 2)
