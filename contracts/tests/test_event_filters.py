"""The one vocabulary of events: labels, and the filter the CLI, the event stream and a
workspace's events share (a type, a type without version, an aggregate)."""

from __future__ import annotations

import pytest

from contracts.event_filters import EventFilter, UnknownEventFilterError, parse_event_filter
from contracts.event_types import (
    KNOWN_EVENT_TYPES,
    PUBLIC_EVENT_TYPES,
    RECORDED_EVENT_TYPES,
    event_label,
    snake_case,
    unversioned,
)


@pytest.mark.parametrize(
    ("type_tag", "label"),
    [
        ("workspace.realized.v1", "Workspace realized"),
        ("workspace.provisioned.v1", "Workspace provisioned"),
        ("workspace_operation.recorded.v1", "Workspace operation recorded"),
        ("api_key.created.v1", "API key created"),
        ("runtime_service.health_changed.v1", "Runtime service health changed"),
        ("run.finished.v2", "Run finished (v2)"),
        ("run.finished", "Run finished"),
    ],
)
def test_every_type_reads_as_a_label(type_tag: str, label: str) -> None:
    assert event_label(type_tag) == label


def test_the_vocabulary_is_lower_snake_case_and_versioned() -> None:
    assert PUBLIC_EVENT_TYPES.isdisjoint(RECORDED_EVENT_TYPES)
    assert KNOWN_EVENT_TYPES == PUBLIC_EVENT_TYPES | RECORDED_EVENT_TYPES
    for type_tag in KNOWN_EVENT_TYPES:
        aggregate, event, version = type_tag.split(".")
        assert snake_case(aggregate) == aggregate
        assert snake_case(event) == event
        assert version == "v1", type_tag
        assert event_label(type_tag)[0].isupper()


@pytest.mark.parametrize(
    ("name", "snake"),
    [("Provisioned", "provisioned"), ("RunLeased", "run_leased"), ("HTTPCheck", "http_check")],
)
def test_class_names_become_snake_case(name: str, snake: str) -> None:
    assert snake_case(name) == snake


def test_a_type_without_version_drops_only_a_version() -> None:
    assert unversioned("run.queued.v1") == "run.queued"
    assert unversioned("run.queued") == "run.queued"
    assert unversioned("run") == "run"


@pytest.mark.parametrize(
    ("given", "passes", "stopped"),
    [
        ("run", ["run.queued.v1", "run.finished.v1", "run.finished.v2"], ["runtime_service.started.v1"]),
        ("run.finished", ["run.finished.v1", "run.finished.v2"], ["run.queued.v1"]),
        ("run.finished.v1", ["run.finished.v1"], ["run.finished.v2", "run.queued.v1"]),
        ("run.queued,workspace", ["run.queued.v1", "workspace.realized.v1"], ["slot.granted.v1"]),
        (["slot", " run.queued.v1 "], ["slot.granted.v1", "run.queued.v1"], ["run.started.v1"]),
    ],
)  # fmt: skip
def test_a_filter_names_types_types_without_version_and_aggregates(
    given: str | list[str], passes: list[str], stopped: list[str]
) -> None:
    wanted = parse_event_filter(given, PUBLIC_EVENT_TYPES)
    assert wanted is not None
    assert all(wanted.matches(t) for t in passes)
    assert not any(wanted.matches(t) for t in stopped)


def test_no_filter_is_none_and_values_are_kept_once_in_order() -> None:
    assert parse_event_filter(None) is None
    assert parse_event_filter(" , ") is None
    assert parse_event_filter("workspace,run,workspace") == EventFilter(("workspace", "run"))
    assert str(parse_event_filter(["run", "slot,run"])) == "run,slot"


def test_recorded_types_pass_where_audit_trails_are_read_not_on_the_stream() -> None:
    assert parse_event_filter("workspace.provisioned") is not None
    assert parse_event_filter("workspace_operation") is not None
    with pytest.raises(UnknownEventFilterError) as refused:
        parse_event_filter("workspace.provisioned,run", PUBLIC_EVENT_TYPES, name="--type")
    assert refused.value.unknown == ("workspace.provisioned",)
    assert "in --type: 'workspace.provisioned' (workspace.provisioned: recorded in audit" in str(
        refused.value
    )


@pytest.mark.parametrize(
    ("given", "hint"),
    [
        ("Provisioned", "did you mean workspace.provisioned?"),
        ("RunLeased", "did you mean workspace.run_leased?"),
        ("Began", "did you mean workspace_operation.began?"),
        ("Spawned", "did you mean runtime_service.spawned?"),
        ("Workspace", "did you mean workspace?"),
        ("run.Queued.v1", "did you mean run.queued.v1?"),
        ("nothing_like_it", ""),
        ("run.queued.v1.x", ""),
        ("run queued", ""),
    ],
)
def test_an_unknown_value_is_refused_saying_what_is_accepted(given: str, hint: str) -> None:
    with pytest.raises(UnknownEventFilterError) as refused:
        parse_event_filter(f"run,{given}")
    error = refused.value
    assert error.unknown == (given,)
    assert (error.code, error.status) == ("validation_failed", 400)
    assert error.details == {"field": "types", "unknown": [given]}
    message = str(error)
    assert hint in message
    assert "types without their version (workspace.realized) or aggregates" in message
    assert "the aggregates are agent, agent_copy, api_key," in message
