"""What the CLI prints: events, audit trails, replay reports, status."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from clipyard_cli.audit import format_trail
from clipyard_cli.bus import InstanceStatus
from clipyard_cli.events import decode_event, format_event, matches_type, type_filter
from clipyard_cli.probes import StackSettings, format_duration
from clipyard_cli.replay import format_report
from clipyard_cli.runstate import ProcessRecord
from clipyard_cli.status import StreamState, format_processes, format_services, format_stream
from clipyard_cli.up import banner
from contracts.service import AuditTrail, ReplayReport, StoredEvent

EVENT = {
    "type": "company.created.v1",
    "aggregateId": "c0ffee00-0000-4000-8000-000000000001",
    "companyId": "c0ffee00-0000-4000-8000-000000000001",
    "actor": {"type": "admin", "id": "admin"},
    "reason": "onboarding",
    "name": "Acme",
}


def test_an_event_line_has_seq_type_label_aggregate_company_actor_and_reason() -> None:
    line = format_event(42, EVENT)
    assert line.split()[:5] == [
        "42",
        "company.created.v1",
        "Company",
        "created",
        EVENT["aggregateId"],
    ]
    assert f"company={EVENT['companyId']}" in line
    assert "actor=admin:admin" in line
    assert line.endswith("reason=onboarding")


def test_missing_envelope_fields_print_as_dashes() -> None:
    line = format_event(1, {"type": "operation.started.v1"})
    assert "company=-" in line
    assert "actor=-" in line
    assert line.endswith("reason=-")


def test_only_json_objects_decode_as_events() -> None:
    assert decode_event(b'{"type": "x"}') == {"type": "x"}
    assert decode_event(b"[1]") is None
    assert decode_event(b"not json") is None


@pytest.mark.parametrize(
    ("type_tag", "subject"),
    [
        (None, "ws.evt.>"),
        ("company.created.v1", "ws.evt.company.created"),
        ("company.created", "ws.evt.company.created"),
        ("workspace", "ws.evt.workspace.>"),
        ("run", "ws.evt.run.>"),
        ("operation.finished.v1", "ws.evt.operation.finished.*"),
        ("inbox.message_rejected.v1", "ws.evt.inbox.message_rejected.*"),
        # Several values: every event, matched on this side.
        ("run,workspace.realized", "ws.evt.>"),
        (["run", "workspace"], "ws.evt.>"),
    ],
)
def test_a_type_becomes_a_stream_filter(type_tag: str | list[str] | None, subject: str) -> None:
    assert type_filter(type_tag) == subject


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ("a.b.c.d", "'a.b.c.d'"),
        ("company.created.x1", "'company.created.x1'"),
        ("Company.created.v1", "did you mean company.created.v1?"),
        ("ws evt", "'ws evt'"),
        ("Run", "did you mean run?"),
        # A stored class name: what it is called now, and that the stream never carries it.
        ("Provisioned", "workspace.provisioned: recorded in audit trails only, never published"),
        ("workspace.provisioned", "recorded in audit trails only"),
    ],
)
def test_a_type_the_stream_does_not_carry_is_refused_saying_what_is_accepted(
    bad: str, said: str
) -> None:
    with pytest.raises(ValueError, match="Unknown event filter in --type") as refused:
        type_filter(bad)
    message = str(refused.value)
    assert said in message
    assert "types without their version (workspace.realized) or aggregates" in message
    assert "run, runtime_provisioning, runtime_service" in message  # the aggregates, listed
    assert "invalid subject token" not in message


def test_types_without_version_and_aggregates_match_every_version_and_type() -> None:
    assert matches_type("company.created.v1", EVENT)
    assert not matches_type("company.host_access_changed.v1", EVENT)
    assert matches_type("company.created", EVENT)
    assert matches_type("company", EVENT)
    assert matches_type("run,company", EVENT)
    assert not matches_type("run", EVENT)
    assert matches_type(None, EVENT)
    assert matches_type("company", {"type": "company.created.v2"})  # a version not known yet


def test_an_audit_trail_names_its_owner_and_lists_events_oldest_first() -> None:
    at = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    events = [
        StoredEvent(
            aggregate_id="a",
            aggregate_version=1,
            type="company.created.v1",
            label="Company created",
            stored_type="Company.Created",
            occurred_at=at,
            actor={"type": "admin", "id": "root"},
            data={"name": "Acme"},
        ),
        StoredEvent(
            aggregate_id="a",
            aggregate_version=2,
            type="company.renamed.v1",
            occurred_at=at,
            run_id="r-1",
            reason="typo",
        ),
    ]
    trail = AuditTrail(
        service="api-gateway", aggregate_id="a", aggregate_type="Company", total=2, events=events
    )
    text = format_trail(trail).splitlines()
    assert text[0] == "aggregate a (Company), owned by api-gateway: 2 events"
    assert text[1].startswith(
        "v1    2026-11-29T12:00:00+00:00  company.created.v1  Company created  actor=admin:root"
    )
    assert text[2].strip() == '{"name":"Acme"}'
    assert "company.renamed.v1  Company renamed  " in text[3]  # a label even when not sent
    assert "run=r-1" in text[3]
    assert text[3].endswith("reason=typo")


def test_a_partial_trail_says_how_much_is_shown() -> None:
    trail = AuditTrail(service="s", aggregate_id="a", aggregate_type=None, total=5, events=[])
    assert format_trail(trail) == "aggregate a, owned by s: 0 of 5 events"


def test_a_replay_report_gives_the_verdict_and_every_difference() -> None:
    good = ReplayReport(
        service="workspace-realizer",
        ok=True,
        notifications_replayed=10,
        read_models=["issues", "workspaces"],
        differences=[],
        duration_ms=12.34,
    )
    assert format_report(good).splitlines() == [
        "replay of workspace-realizer: OK, read models match",
        "  10 notifications replayed in 12.3 ms",
        "  read models: issues, workspaces",
    ]
    bad = ReplayReport(
        service="x",
        ok=False,
        notifications_replayed=1,
        read_models=[],
        differences=["issues: 3 live, 2 replayed"],
        duration_ms=1.0,
    )
    lines = format_report(bad).splitlines()
    assert lines[0] == "replay of x: 1 DIFFERENCES"
    assert lines[-1] == "  - issues: 3 live, 2 replayed"


def test_status_lists_each_service_and_the_stream() -> None:
    gateway = InstanceStatus(
        service="api-gateway",
        instance="gw-1",
        node="local",
        id="ID1",
        version="0.1.0",
        latency_ms=1.25,
    )
    text = format_services({"api-gateway": [gateway], "git-credentials": []}).splitlines()
    header = "SERVICE STATUS INSTANCE NODE VERSION LATENCY ROLE PROJECTION"
    assert text[0].split() == header.split()
    assert text[1].split() == ["api-gateway", "ok", "gw-1", "local", "0.1.0", "1.2", "ms", "-", "-"]
    assert text[2].split() == ["git-credentials", "DOWN", "-", "-", "-", "-", "-", "-"]
    stream = format_stream("2.15.1", "nats://127.0.0.1:4222", StreamState(3, 300, 1, 3, 4))
    assert "WS_EVENTS: 3 messages, 300 bytes, seq 1..3, 4 consumers" in stream
    assert "not created yet" in format_stream("2.15.1", "u", None)


def test_status_shows_each_process_of_up_with_its_restarts() -> None:
    now = 1_700_000_000.0
    clock = time.strftime("%H:%M:%S", time.localtime(now - 125))
    records = {
        "nats-server": ProcessRecord(
            pid=41, started=now - 125, restarts=2, last_restart=now - 125, last_exit="signal 9"
        ),
        "api-gateway": ProcessRecord(pid=42, started=now - 3 * 3600 - 420),
        "workspace-realizer": ProcessRecord(
            pid=None,
            state="restarting",
            restarts=7,
            last_restart=now - 4,
            last_exit="exit code 1",
            next_start=now + 6,
            crash_loop=True,
        ),
    }
    lines = format_processes(99, records, now).splitlines()
    assert lines[0] == "clipyard up (pid 99) runs:"
    assert lines[1].split() == ["PROCESS", "STATE", "PID", "UPTIME", "RESTARTS", "LAST", "RESTART"]
    assert lines[2].split() == [
        "nats-server", "up", "41", "2m05s", "2", clock, "(2m05s", "ago),", "after", "signal", "9"
    ]  # fmt: skip
    assert lines[3].split() == ["api-gateway", "up", "42", "3h07m", "0", "-"]
    assert lines[4].startswith("workspace-realizer    restarting in 6 s, crash loop ")
    assert lines[4].split()[7:10] == ["-", "-", "7"]
    assert lines[4].endswith("(4.0s ago), after exit code 1")


def test_durations_read_as_one_word() -> None:
    assert [format_duration(s) for s in (0.25, 42.9, 185, 7620)] == [
        "0.2s",
        "42s",
        "3m05s",
        "2h07m",
    ]


def test_the_banner_shows_the_api_url_and_the_admin_key(tmp_path: Path) -> None:
    settings = StackSettings(home=tmp_path, http_port=18080)
    text = banner(settings, "cyadm-key", key_source="admin.key")
    assert "http://127.0.0.1:18080/api" in text
    assert "cyadm-key" in text
    assert str(tmp_path / "nats" / "passwords.json") in text
