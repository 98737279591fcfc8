"""The runtime-supervisor's eventsourcing application: its use cases and read models."""

from __future__ import annotations

from typing import Any

from eventstore import ServiceApplication

__all__ = ["RuntimeSupervisorApplication"]


class RuntimeSupervisorApplication(ServiceApplication):
    """Rebuilds the runtime-supervisor's read models from its own store; holds its use cases."""

    def project(self, domain_event: Any) -> None:
        """Apply one stored event to the read models (none yet in the skeleton)."""

    def read_models(self) -> dict[str, Any]:
        """The read models as plain data, compared by replay verification."""
        return {}
