"""Bus commands, queries and views of adapter slots (owner: runtime-supervisor).

A slot is where one run's adapter runs (ARCHITECTURE §6): ``local_stdio`` (a bounded pool,
``CLIPYARD_SLOTS``; the adapter in its own process group; untrusted agents as a slot's own
unprivileged user, with resource limits, a wall-clock timeout, a sanitized environment and
``bwrap`` confinement) or ``remote_http`` (the context POSTed to the agent's URL). The controller
acquires a slot, launches the adapter in it, and hears the end from ``slot.adapter_finished.v1``;
it kills the adapter on cancel and timeout.

The run token travels only inside :class:`LaunchAdapter` (a bus request, never stored or logged:
its ``repr`` hides it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec

from contracts.agents import AdapterLimits
from contracts.base import Command, Query, Struct
from contracts.workspace_config import EgressRule

__all__ = [
    "AcquireSlot",
    "AdapterEnd",
    "AdapterLaunched",
    "GetRunLog",
    "GetRunSlot",
    "GetSlotHealth",
    "KillAdapter",
    "LaunchAdapter",
    "ReleaseSlot",
    "RunLogSlice",
    "RunSlot",
    "SlotGrant",
    "SlotHealth",
    "SlotType",
]

SlotType = Literal["local_stdio", "remote_http"]
AdapterEnd = Literal["exited", "timed_out", "killed", "detached", "launch_failed"]
"""How an adapter ended: by itself, by its wall-clock timeout, killed (cancel), lost with a
supervisor that stopped (``detached``), or never started."""


class SlotGrant(Struct, frozen=True, kw_only=True):
    """A slot granted to a run."""

    slot_id: str
    type: SlotType
    index: int | None = None
    """The pool position of a ``local_stdio`` slot."""
    contained: bool
    """True when the adapter will run as the slot's unprivileged user (untrusted agents)."""
    sandbox: Literal["bwrap", "user_only", "none"]
    """``bwrap``: confined; ``none``: trusted, unconfined; ``user_only`` is reserved (never
    produced: untrusted agents need ``bwrap``, else ``sandbox_unavailable``)."""


class AdapterLaunched(Struct, frozen=True, kw_only=True):
    """The adapter started (``pid`` and ``pgid`` for ``local_stdio``)."""

    slot_id: str
    run_id: str
    pid: int | None = None
    pgid: int | None = None
    started_at: datetime
    deadline: datetime
    """When the wall-clock timeout kills it."""


class RunSlot(Struct, frozen=True, kw_only=True):
    """What the supervisor knows of a run's slot (``GetRunSlot``; the controller's recovery)."""

    slot_id: str
    run_id: str
    type: SlotType
    state: Literal["granted", "running", "finished", "released"]
    end: AdapterEnd | None = None
    exit_code: int | None = None
    signal: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    usage: dict[str, Any] | None = None
    result: Any = None
    stdout_excerpt: str | None = None
    stderr_excerpt: str | None = None
    log_bytes: int | None = None
    error: str | None = None


class SlotHealth(Struct, frozen=True, kw_only=True):
    """One slot type's health (``GET /api/companies/{companyId}/tools/runtime-health``)."""

    type: SlotType
    capacity: int | None
    """``None``: unbounded (``remote_http``)."""
    in_use: int
    healthy: bool
    sandbox: Literal["bwrap", "user_only", "none"] | None = None
    detail: str | None = None
    """Why it is unhealthy, or what confinement untrusted agents get."""


class RunLogSlice(Struct, frozen=True, kw_only=True):
    """Bytes of a run's log (stdout and stderr as written, interleaved)."""

    run_id: str
    offset: int
    length: int
    size: int
    text: str


# Commands and queries (ws.cmd.slot.<verb>.<node>, ws.qry.slot.*).


class AcquireSlot(Command, tag="slot.acquire.v1", frozen=True, kw_only=True):
    """Grant a slot to a run → ``SlotGrant``, or 409 ``slot_unavailable`` when the pool is full
    (the controller retries) or 422 ``sandbox_unavailable`` when an untrusted agent cannot be
    contained here. Idempotent per run: the run's live grant is answered again."""

    run_id: str
    agent_id: str
    adapter_type: Literal["process", "http"]
    trusted: bool


class LaunchAdapter(Command, tag="slot.launch.v1", frozen=True, kw_only=True):
    """Start the run's adapter in its granted slot → ``AdapterLaunched``.

    ``process``: ``command`` in the workspace's directory (the supervisor's copy of
    ``workspaceId``; a per-run scratch folder when the run has none) with ``env`` added to the
    sanitized environment; ``http``: POST ``context`` to ``url``. ``env`` and ``context`` hold the
    run token: hidden from ``repr``, never stored.
    """

    slot_id: str
    run_id: str
    agent_id: str
    issue_id: str | None = None
    workspace_id: str | None = None
    adapter_type: Literal["process", "http"]
    command: list[str] = msgspec.field(default_factory=list)
    url: str | None = None
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    env: dict[str, str] = msgspec.field(default_factory=dict)
    context: dict[str, Any] = msgspec.field(default_factory=dict)
    timeout_sec: int
    limits: AdapterLimits = msgspec.field(default_factory=AdapterLimits)
    trusted: bool
    egress_allowlist: list[EgressRule] = msgspec.field(default_factory=list)
    """The agent's own allowlist entries, added to its workspace's while the run holds it."""

    def __repr__(self) -> str:
        return (
            f"LaunchAdapter(slot_id={self.slot_id!r}, run_id={self.run_id!r}, "
            f"adapter_type={self.adapter_type!r}, env=***, context=***, headers=***)"
        )

    def __rich_repr__(self, /) -> list[tuple[str, Any]]:
        """What ``rich`` prints: no environment, context or headers."""
        return [("slot_id", self.slot_id), ("run_id", self.run_id)]


class KillAdapter(Command, tag="slot.kill.v1", frozen=True, kw_only=True):
    """Kill the run's adapter's whole process group (cancel, the controller's timeout) →
    ``RunSlot``; the end is recorded ``killed`` (or ``timed_out`` with ``timedOut``)."""

    run_id: str
    timed_out: bool = False
    reason: str | None = None


class ReleaseSlot(Command, tag="slot.release.v1", frozen=True, kw_only=True):
    """Free the run's slot (cleanup; kills the adapter first if it still runs) → ``None``."""

    run_id: str


class GetRunSlot(Query, tag="slot.get_for_run.v1", frozen=True, kw_only=True):
    """The run's slot → ``RunSlot``, or 404 when the run never had one."""

    run_id: str


class GetRunLog(Query, tag="slot.run_log.v1", frozen=True, kw_only=True):
    """Bytes of the run's log → ``RunLogSlice`` (``length`` at most 256 KiB)."""

    run_id: str
    offset: int = 0
    length: int = 65536


class GetSlotHealth(Query, tag="slot.health.v1", frozen=True, kw_only=True):
    """Health of each slot type → ``list[SlotHealth]``."""
