"""Desired state of a workspace's runtime services, per service index (reference §6.5, §6.6).

``serviceStates`` maps ``"<serviceIndex>"`` to ``running``, ``stopped`` or ``manual``; the
workspace-level ``desiredState`` aggregates them. A ``manual`` index is never overwritten by a
start or a stop, and a run starts only the ``running`` ones (DECISIONS 7). A service's configured
``desiredState`` is its index's state until the supervisor records one (:func:`seeded_states`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Literal

__all__ = [
    "DESIRED_STATES",
    "aggregate_desired_state",
    "desired_state_patch",
    "seeded_states",
    "wanted_for_run",
]

DESIRED_STATES: Final = frozenset({"running", "stopped", "manual"})


def aggregate_desired_state(states: Mapping[str, str]) -> str:
    """``running`` if any index is running, else ``manual`` if any is manual, else ``stopped``."""
    values = set(states.values())
    if "running" in values:
        return "running"
    return "manual" if "manual" in values else "stopped"


def desired_state_patch(
    indexes: Sequence[int],
    current_desired: str | None,
    current_states: Mapping[str, str],
    action: Literal["start", "stop", "restart"],
    service_index: int | None,
) -> tuple[str, dict[str, str]]:
    """The desired state after a control action (``buildWorkspaceRuntimeDesiredStatePatch``).

    Every configured index takes its current state, else ``current_desired``, else ``stopped``;
    the target (``stopped`` for ``stop``, ``running`` for ``start`` and ``restart``) goes to
    ``service_index``, or to every index when it is ``None``, except to ``manual`` indexes.

    Args:
        indexes: The configured service indexes.
        current_desired: The workspace's current ``desiredState``.
        current_states: The current ``serviceStates`` (keys are indexes as strings).
        action: ``start``, ``stop`` or ``restart``.
        service_index: The one index acted on, or ``None`` for all services.

    Returns:
        ``(desiredState, serviceStates)`` with an entry for every configured index.

    Raises:
        ValueError: An unknown action, or a ``service_index`` that is not configured.
    """
    if action not in ("start", "stop", "restart"):
        raise ValueError(f"No desired state for the action {action!r}")
    if service_index is not None and service_index not in indexes:
        raise ValueError(f"Service index {service_index} is not configured")
    fallback = _valid(current_desired, "stopped")
    states = {str(i): _valid(current_states.get(str(i)), fallback) for i in indexes}
    target = "stopped" if action == "stop" else "running"
    for index in indexes if service_index is None else [service_index]:
        if states[str(index)] != "manual":
            states[str(index)] = target
    return aggregate_desired_state(states), states


def seeded_states(
    configured: Mapping[int, str | None], recorded: Mapping[str, str]
) -> dict[str, str]:
    """The per-index states with the configured initial ones filled in.

    Args:
        configured: Service index → its configured ``desiredState`` (None: not configured).
        recorded: The ``serviceStates`` the supervisor recorded (keys are indexes as strings).

    Returns:
        ``recorded`` plus, for each index it has no entry for, its configured state (when that
        is a valid one); a recorded entry always wins.
    """
    states = dict(recorded)
    for index, state in configured.items():
        if str(index) not in states and state in DESIRED_STATES:
            states[str(index)] = state
    return states


def _valid(state: str | None, default: str) -> str:
    return state if state is not None and state in DESIRED_STATES else default


def wanted_for_run(
    indexes: Sequence[int], desired: str | None, states: Mapping[str, str]
) -> list[int]:
    """The service indexes a run starts: those whose state is ``running``.

    Args:
        indexes: The configured service indexes.
        desired: The workspace's ``desiredState``: the state of indexes missing from ``states``
            (default ``running``).
        states: ``serviceStates`` (keys are indexes as strings).

    Returns:
        The indexes to start, in the given order; never a ``manual`` or ``stopped`` one.
    """
    default = desired or "running"
    return [index for index in indexes if states.get(str(index), default) == "running"]
