"""Public events of adapter slots (owner: runtime-supervisor).

The controller's inbox hears ``slot.adapter_finished.v1`` to collect a run's result; every event
names the run (``runId`` of the envelope and ``aggregateId`` = the slot's id).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from contracts.base import Event

__all__ = ["SlotAdapterFinished", "SlotAdapterStarted", "SlotGranted", "SlotReleased"]


class SlotGranted(Event, tag="slot.granted.v1", frozen=True, kw_only=True):
    """A slot was granted to a run."""

    agent_id: str
    slot_type: Literal["local_stdio", "remote_http"]
    index: int | None = None
    contained: bool
    sandbox: Literal["bwrap", "user_only", "none"]


class SlotAdapterStarted(Event, tag="slot.adapter_started.v1", frozen=True, kw_only=True):
    """The run's adapter started in its slot."""

    agent_id: str
    workspace_id: str | None = None
    pid: int | None = None
    pgid: int | None = None
    deadline: datetime


class SlotAdapterFinished(Event, tag="slot.adapter_finished.v1", frozen=True, kw_only=True):
    """The run's adapter ended: its exit, the last-line JSON ``{usage, result}`` of its stdout,
    excerpts (tails, at most 64 KiB each) and the log's size."""

    agent_id: str
    end: Literal["exited", "timed_out", "killed", "detached", "launch_failed"]
    exit_code: int | None = None
    signal: str | None = None
    usage: dict[str, Any] | None = None
    result: Any = None
    stdout_excerpt: str | None = None
    stderr_excerpt: str | None = None
    log_bytes: int | None = None
    error: str | None = None
    group_gone: bool = True
    """Whether no process of the adapter's group survived (checked after a kill)."""


class SlotReleased(Event, tag="slot.released.v1", frozen=True, kw_only=True):
    """The run's slot is free again."""

    agent_id: str
