"""NATS endpoints of the runtime-supervisor, by concern: runtime control and reads
(:mod:`.runtime`), the stops other services ask for (:mod:`.stops`), and its workspace operations
and events (:mod:`.audit`)."""

from __future__ import annotations

from runtime_supervisor.endpoints.audit import register_audit
from runtime_supervisor.endpoints.common import Endpoints
from runtime_supervisor.endpoints.contained import register_contained
from runtime_supervisor.endpoints.runtime import register_runtime
from runtime_supervisor.endpoints.slots import register_slots
from runtime_supervisor.endpoints.stops import register_stops

__all__ = [
    "Endpoints",
    "register_audit",
    "register_contained",
    "register_runtime",
    "register_slots",
    "register_stops",
]
