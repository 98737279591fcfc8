"""The slot aggregate on the in-memory store: grants from the bounded pool, the end recorded
once, the published events (each naming its run, built from the stored event alone), replay,
and the refusal of untrusted agents where nothing can contain them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "state"))

from state_world import Clock, make_app

from contracts import slot_events as se
from contracts.events import AnyEvent
from eventstore import verify_replay
from eventstore.publication import build_message
from runtime_supervisor.application import RuntimeSupervisorApplication
from runtime_supervisor.domain import SandboxUnavailableError, SlotUnavailableError
from runtime_supervisor.publishing import to_contract

ACME = "c-acme"


def _grant(app: RuntimeSupervisorApplication, run_id: str, *, trusted: bool = True,
           sandbox: str | None = "bwrap") -> Any:  # fmt: skip
    return app.acquire_slot(ACME, run_id=run_id, agent_id="agent-1", adapter_type="process",
                            trusted=trusted, capacity=1, sandbox=sandbox,
                            sandbox_detail="Run it as root.", ttl=120)  # fmt: skip


def _published(app: RuntimeSupervisorApplication) -> list[Any]:
    found = []
    for notification in app.recorder.select_notifications(start=0, limit=1000):
        stored = app.mapper.to_domain_event(notification)  # as the relay reads it
        contract = to_contract(stored)
        if contract is None:
            continue
        message = build_message(to_contract, stored, service="supervisor",
                                notification_id=notification.id, origin="x")  # fmt: skip
        assert message is not None
        assert msgspec.json.decode(message.payload, type=AnyEvent) == contract
        found.append(contract)
    return found


def test_a_slot_lives_granted_running_finished_released_and_publishes_with_its_run() -> None:
    app = make_app(Clock())
    info = _grant(app, "run-1", trusted=False)
    assert (info.index, info.contained, info.sandbox) == (0, True, "bwrap")
    assert _grant(app, "run-1", trusted=False).slot_id == info.slot_id  # idempotent per run
    with pytest.raises(SlotUnavailableError):
        _grant(app, "run-2")
    app.record_adapter_started(info.slot_id, workspace_id="ws-1", issue_id=None, pid=10,
                               pgid=10, start_time=5, slot_user="clipyard-slot-0", cwd="/w",
                               log_path="/w/run.log", deadline=app.now())  # fmt: skip
    assert app.record_adapter_end(info.slot_id, "exited", exit_code=0, result={"ok": True})
    assert not app.record_adapter_end(info.slot_id, "killed")  # the first end stays
    assert app.run_slot_view(ACME, "run-1").end == "exited"
    assert app.release_slot_record(info.slot_id, "cleanup")
    assert not app.release_slot_record(info.slot_id, "cleanup")
    assert _grant(app, "run-2").index == 0  # the position is free again

    events = [e for e in _published(app) if e.aggregate == "slot"]
    assert [type(e) for e in events] == [se.SlotGranted, se.SlotAdapterStarted,
                                         se.SlotAdapterFinished, se.SlotReleased,
                                         se.SlotGranted]  # fmt: skip
    assert [e.run_id for e in events] == ["run-1"] * 4 + ["run-2"]
    assert all(e.agent_id == "agent-1" and e.company_id == ACME for e in events)
    finished = events[2]
    assert finished.end == "exited"
    assert finished.result == {"ok": True}
    assert finished.group_gone
    assert events[1].workspace_id == "ws-1"
    assert events[1].pid == 10

    report = verify_replay(RuntimeSupervisorApplication(service="supervisor"), app)
    assert report.ok, report.differences
    assert {"slots", "slots_by_run"} <= set(report.read_models)


def test_untrusted_without_containment_is_refused_with_what_to_do() -> None:
    app = make_app(Clock())
    with pytest.raises(SandboxUnavailableError, match="Run it as root"):
        _grant(app, "run-1", trusted=False, sandbox=None)
    assert _grant(app, "run-1", trusted=True).sandbox == "none"
