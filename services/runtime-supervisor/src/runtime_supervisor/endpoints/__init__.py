"""NATS endpoints of the runtime-supervisor, one class per concern: adapter slots
(:mod:`.slots`), runtime control and reads (:mod:`.runtime`), the stops other services ask for
(:mod:`.stops`), its workspace operations and events (:mod:`.audit`) and contained one-shot
commands (:mod:`.contained`)."""

from __future__ import annotations

from runtime_supervisor.endpoints.audit import AuditEndpoints
from runtime_supervisor.endpoints.common import SupervisorEndpoints
from runtime_supervisor.endpoints.contained import ContainedEndpoints
from runtime_supervisor.endpoints.runtime import RuntimeEndpoints
from runtime_supervisor.endpoints.slots import SlotEndpoints
from runtime_supervisor.endpoints.stops import StopEndpoints

__all__ = [
    "AuditEndpoints",
    "ContainedEndpoints",
    "RuntimeEndpoints",
    "SlotEndpoints",
    "StopEndpoints",
    "SupervisorEndpoints",
]
