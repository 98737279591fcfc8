"""Public events of heartbeat runs (owner: heartbeat-controller).

The supervisor and the gateway react to them (a finished run releases its service leases and its
token); the realizer follows which run holds a workspace. The runtime issue defines them so its
tests can publish them; the heartbeat issue's controller publishes them.
"""

from __future__ import annotations

from typing import Literal

from contracts.base import Event

__all__ = ["RunFinished", "RunStarted", "RunStatus"]

RunStatus = Literal["queued", "running", "succeeded", "failed", "cancelled", "timed_out"]


class RunStarted(Event, tag="run.started.v1", frozen=True, kw_only=True):
    """A run took its workspace and is running (``aggregateId`` is the run's id)."""

    agent_id: str
    issue_id: str | None = None
    workspace_id: str | None = None


class RunFinished(Event, tag="run.finished.v1", frozen=True, kw_only=True):
    """A run ended, whatever the outcome; its leases and token are to be released."""

    agent_id: str
    issue_id: str | None = None
    workspace_id: str | None = None
    status: RunStatus
    error_code: str | None = None
