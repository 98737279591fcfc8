"""The orchestration of heartbeat runs: the dispatcher, one runner task per run through stages
2-6, the ports to the realizer, supervisor and gateway, timers, restart recovery and the
adapter's environment (docs/design/heartbeat-runs.md)."""

from heartbeat_controller.orchestration.context import Orchestration, RunChannel, RunSettings
from heartbeat_controller.orchestration.dispatcher import Dispatcher
from heartbeat_controller.orchestration.ports import PortError, RunPorts
from heartbeat_controller.orchestration.recovery import recover_runs

__all__ = [
    "Dispatcher",
    "Orchestration",
    "PortError",
    "RunChannel",
    "RunPorts",
    "RunSettings",
    "recover_runs",
]
