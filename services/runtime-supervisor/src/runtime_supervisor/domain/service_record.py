"""The immutable record of a runtime service instance, and its statuses: what the orchestration
and the views use off the store's thread."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal, TypedDict

import msgspec

from contracts.workspace_config import StopPolicy

__all__ = [
    "HEALTH_STATUSES",
    "LAST_OUTPUT_CHARS",
    "LIVE_STATUSES",
    "SERVICE_STATUSES",
    "ServiceRecord",
    "StoredStopPolicy",
    "record_of",
    "stop_policy_of",
    "tail_text",
]

SERVICE_STATUSES: Final = ("starting", "running", "stopped", "failed")
LIVE_STATUSES: Final = frozenset({"starting", "running"})
"""Statuses whose port stays reserved and whose process may be alive."""
HEALTH_STATUSES: Final = ("unknown", "healthy", "unhealthy")
LAST_OUTPUT_CHARS: Final = 4096
"""The tail of a service's output kept with its end (reference §6.2: the last ≤ 4 KB)."""


class StoredStopPolicy(TypedDict, total=False):
    """A service's stop policy as its ``StartBegan`` event stores it: the configured
    :class:`~contracts.workspace_config.StopPolicy` as plain camelCase data (``{type,
    idleSeconds}``; a reader defaults a missing ``type`` to ``manual``)."""

    type: Literal["manual", "idle_timeout", "on_run_finish"]
    idleSeconds: int | None


def stop_policy_of(stored: StoredStopPolicy | None) -> StopPolicy | None:
    """A stored stop policy as the wire carries it."""
    return None if stored is None else msgspec.convert(stored, StopPolicy)


def tail_text(text: str | None, limit: int = LAST_OUTPUT_CHARS) -> str | None:
    """The last ``limit`` characters of ``text`` (None stays None)."""
    return None if text is None else text[-limit:]


@dataclass(frozen=True, slots=True)
class ServiceRecord:
    """A runtime service instance as the orchestration sees it: an immutable copy, safe to use
    off the store's thread."""

    id: str
    company_id: str
    target_key: str
    execution_workspace_id: str | None
    project_workspace_id: str | None
    service_name: str
    workspace_command_id: str | None
    service_index: int | None
    command: str
    cwd: str
    port: int | None
    url: str | None
    lifecycle: str
    scope_type: str | None
    scope_id: str | None
    reuse_key: str | None
    stop_policy: StoredStopPolicy | None
    run_dir: str | None
    started_by_run_id: str | None
    owner_agent_id: str | None
    status: str
    health_status: str
    pid: int | None
    pgid: int | None
    process_start_time: int | None
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22)."""
    wrapper_start_time: int | None
    """The start time of its wrapper, the leader of its process group (same clock): a stop
    signals group ``pgid`` only while its leader still has it (None: not recorded)."""
    lease_run_ids: tuple[str, ...]
    created_at: datetime
    started_at: datetime | None
    stopped_at: datetime | None
    last_used_at: datetime | None
    adopted_at: datetime | None
    stop_reason: str | None
    exit_code: int | None
    exit_signal: int | None
    last_error: str | None
    last_output: str | None
    node_id: str | None = None
    """The worker node whose supervisor started it (None: before worker nodes)."""

    @property
    def live(self) -> bool:
        """``starting`` or ``running``: its port is reserved, its process may be alive."""
        return self.status in LIVE_STATUSES


def record_of(service: Any) -> ServiceRecord:
    """The record of a ``RuntimeService`` aggregate (its attributes, copied)."""
    values = {f.name: getattr(service, f.name) for f in dataclasses.fields(ServiceRecord)}
    values["id"] = str(service.id)
    values["lease_run_ids"] = tuple(service.lease_run_ids)
    values["stop_policy"] = service.stop_policy.copy() if service.stop_policy is not None else None
    return ServiceRecord(**values)
