"""The heartbeat-controller's eventsourcing application: its use cases (the Application API of
docs/design/heartbeat-runs.md) on top of the read models of :mod:`heartbeat_controller.readmodels`.

Everything runs on the store's thread, synchronously; each use case checks, loads, calls the
aggregates and saves once. The orchestration (dispatcher, run tasks, timers, recovery) does the
bus work around these calls and records each step here. Agents, wakes and cancels come with the
principal of the request; the run lifecycle calls act as Clipyard itself (the current cause when
one is set, else ``system``).

Who may do what is the one access model, ``servicekit.access`` (ARCHITECTURE §5.1), asked at the
entry of each use case and query, once: first the kind-level rule (``Access.reach`` with the
resource and action of the route: agents read, write or control (wake); runs read or control
(cancel); the admin key reaches neither, Clipyard itself everything), then the company (another
company's agent or run is *not found*) and the *own* rules, which only the controller can check:
an agent key reads and wakes only its agent (for no issue, or an issue assigned to it), reads and
cancels only its agent's runs; a run token reads and cancels only its own run and wakes its agent
only for its run's issue (or no issue). The run a request acts for (``X-Run-Id``) is checked
before anything is saved (``UseCaseBase._check_acting_run``).
"""

from __future__ import annotations

from heartbeat_controller.domain.scheduling import AgentSnapshot, Claim
from heartbeat_controller.usecases import AgentUseCases, LeaseOutcome, RunUseCases, WakeUseCases

__all__ = ["AgentSnapshot", "Claim", "HeartbeatControllerApplication", "LeaseOutcome"]


class HeartbeatControllerApplication(AgentUseCases, WakeUseCases, RunUseCases):
    """Agents, wakeup requests, runs and workspace run leases, and the copies of the realizer's
    issues; the only writer of the controller's store."""
