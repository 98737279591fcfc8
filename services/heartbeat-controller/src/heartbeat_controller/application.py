"""The heartbeat-controller's eventsourcing application: its use cases (the Application API of
docs/design/heartbeat-runs.md) on top of the read models of :mod:`heartbeat_controller.readmodels`.

Everything runs on the store's thread, synchronously; each use case checks, loads, calls the
aggregates and saves once. The orchestration (dispatcher, run tasks, timers, recovery) does the
bus work around these calls and records each step here. Agents, wakes and cancels come with the
principal of the request (access rules in :mod:`heartbeat_controller.domain.access`); the run
lifecycle calls act as Clipyard itself (the current cause when one is set, else ``system``).
"""

from __future__ import annotations

from heartbeat_controller.scheduling import AgentSnapshot, Claim
from heartbeat_controller.usecases import AgentUseCases, LeaseOutcome, RunUseCases, WakeUseCases

__all__ = ["AgentSnapshot", "Claim", "HeartbeatControllerApplication", "LeaseOutcome"]


class HeartbeatControllerApplication(AgentUseCases, WakeUseCases, RunUseCases):
    """Agents, wakeup requests, runs and workspace run leases, and the copies of the realizer's
    issues; the only writer of the controller's store."""
