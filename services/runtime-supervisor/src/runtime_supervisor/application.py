"""The runtime-supervisor's eventsourcing application: its use cases and read models.

Use cases are a few lines each (check, load, one aggregate command, save) and run on the store's
thread; the process work (spawn, readiness, stop, jobs) happens in the orchestration around them.
The decisions of the pure rules (desired-state patch, reuse key, lease) are taken there and
recorded here.
"""

from __future__ import annotations

from runtime_supervisor.usecases.copies import CopyUseCases
from runtime_supervisor.usecases.egress import EgressUseCases
from runtime_supervisor.usecases.nodes import NodeUseCases
from runtime_supervisor.usecases.operations import OperationUseCases
from runtime_supervisor.usecases.runtimes import RuntimeUseCases
from runtime_supervisor.usecases.slots import SlotUseCases

__all__ = ["RuntimeSupervisorApplication"]


class RuntimeSupervisorApplication(
    CopyUseCases, RuntimeUseCases, OperationUseCases, SlotUseCases, EgressUseCases, NodeUseCases
):
    """Runtime services, target runtimes, the supervisor's workspace operations, what the
    workspaces reached outside, the worker nodes, and its copies of the realizer's and the controller's facts;
    the only writer of the supervisor's store."""
