"""Subject builders: the layout of ARCHITECTURE §2, and refusal of anything else."""

from __future__ import annotations

import pytest

from contracts import subjects


def test_event_subject_drops_the_version_and_checks_the_owner() -> None:
    assert subjects.event_subject("company.created.v1", "gateway") == "ws.evt.company.created"
    with pytest.raises(ValueError, match="owned by 'gateway'"):
        subjects.event_subject("company.created.v1", "realizer")


def test_shared_aggregates_end_with_the_publishing_service() -> None:
    subject = subjects.event_subject("operation.finished.v1", "supervisor")
    assert subject == "ws.evt.operation.finished.supervisor"


def test_host_bound_commands_end_with_the_node() -> None:
    assert subjects.command("workspace", "realize", "local") == "ws.cmd.workspace.realize.local"
    assert subjects.query("workspace", "get") == "ws.qry.workspace.get"
    assert subjects.service_query("realizer", "audit") == "ws.qry.realizer.audit"


@pytest.mark.parametrize("bad", ["Upper", "with.dot", "", "$SRV", "sp ace", "*", ">"])
def test_invalid_tokens_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid subject token"):
        subjects.command("workspace", bad)


def test_event_type_must_be_versioned() -> None:
    with pytest.raises(ValueError, match="v<N>"):
        subjects.event_subject("company.created", "gateway")


def test_filters_select_exactly_one_service() -> None:
    filters = subjects.event_filters_of("realizer")
    assert "ws.evt.workspace.>" in filters
    assert "ws.evt.operation.*.realizer" in filters
    assert not any("company" in f for f in filters)


def test_every_aggregate_has_one_owner_among_the_services() -> None:
    assert set(subjects.AGGREGATE_OWNERS.values()) == set(subjects.SERVICES)
    assert not set(subjects.SHARED_AGGREGATES) & set(subjects.AGGREGATE_OWNERS)
