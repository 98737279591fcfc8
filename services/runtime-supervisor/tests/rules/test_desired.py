"""Desired-state patches per service index (reference §6.5, case 52) and run selection."""

from __future__ import annotations

import pytest

from runtime_supervisor.domain.desired import (
    aggregate_desired_state,
    desired_state_patch,
    seeded_states,
    wanted_for_run,
)


def test_case_52_stop_all_keeps_manual_then_start_one() -> None:
    desired, states = desired_state_patch(
        [0, 1], "running", {"0": "running", "1": "manual"}, "stop", None
    )
    assert states == {"0": "stopped", "1": "manual"}
    assert desired == "manual"
    desired, states = desired_state_patch([0, 1], desired, states, "start", 0)
    assert states == {"0": "running", "1": "manual"}
    assert desired == "running"


def test_restart_means_running() -> None:
    assert desired_state_patch([0], "stopped", {"0": "stopped"}, "restart", None) == (
        "running",
        {"0": "running"},
    )


def test_a_single_index_leaves_the_others() -> None:
    desired, states = desired_state_patch(
        [0, 1, 2], None, {"0": "running", "1": "running", "2": "stopped"}, "stop", 1
    )
    assert states == {"0": "running", "1": "stopped", "2": "stopped"}
    assert desired == "running"


def test_a_targeted_start_never_overwrites_manual() -> None:
    assert desired_state_patch([0], "manual", {"0": "manual"}, "start", 0) == (
        "manual",
        {"0": "manual"},
    )


def test_missing_indexes_take_the_current_desired_state_else_stopped() -> None:
    _, states = desired_state_patch([0, 1, 2], "running", {}, "stop", 2)
    assert states == {"0": "running", "1": "running", "2": "stopped"}
    _, states = desired_state_patch([0, 1], None, {"1": "bogus"}, "start", 0)
    assert states == {"0": "running", "1": "stopped"}
    _, states = desired_state_patch([0, 1], "manual", {}, "start", None)
    assert states == {"0": "manual", "1": "manual"}


def test_entries_of_unconfigured_indexes_are_dropped() -> None:
    _, states = desired_state_patch([0], "running", {"0": "running", "7": "manual"}, "stop", None)
    assert states == {"0": "stopped"}


def test_refusals() -> None:
    with pytest.raises(ValueError, match="index 3"):
        desired_state_patch([0, 1], None, {}, "start", 3)
    with pytest.raises(ValueError, match="'run'"):
        desired_state_patch([0], None, {}, "run", None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        ({}, "stopped"),
        ({"0": "stopped", "1": "stopped"}, "stopped"),
        ({"0": "stopped", "1": "manual"}, "manual"),
        ({"0": "manual", "1": "running"}, "running"),
    ],
)
def test_aggregate(states: dict[str, str], expected: str) -> None:
    assert aggregate_desired_state(states) == expected


def test_a_run_wants_only_running_indexes() -> None:
    states = {"0": "running", "1": "manual", "2": "stopped"}
    assert wanted_for_run([0, 1, 2, 3], None, states) == [0, 3]
    assert wanted_for_run([0, 1, 2, 3], "stopped", states) == [0]
    assert wanted_for_run([0, 1], "manual", {}) == []
    assert wanted_for_run([], "running", {}) == []


def test_configured_states_fill_only_the_indexes_with_nothing_recorded() -> None:
    configured = {0: "running", 1: "manual", 2: None, 3: "bogus"}

    assert seeded_states(configured, {}) == {"0": "running", "1": "manual"}
    assert seeded_states(configured, {"1": "stopped", "5": "manual"}) == {
        "0": "running",
        "1": "stopped",
        "5": "manual",
    }
    # Seeded, a stop of all services leaves the manual index alone and a run skips it.
    _, states = desired_state_patch([0, 1], None, seeded_states(configured, {}), "stop", None)
    assert states == {"0": "stopped", "1": "manual"}
    assert wanted_for_run([0, 1], None, seeded_states(configured, {})) == [0]
