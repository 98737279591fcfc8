"""Domain of the heartbeat-controller: aggregates, past-tense events and errors (pure, no I/O).

The skeleton owns no aggregates yet; the issues that give this service its work add them here.
"""

from __future__ import annotations

__all__ = ["HeartbeatControllerError"]


class HeartbeatControllerError(Exception):
    """Base of every error the heartbeat-controller raises."""

    code = "state_conflict"
    status = 409
