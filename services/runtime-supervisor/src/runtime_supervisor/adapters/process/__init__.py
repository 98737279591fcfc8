"""The process layer: real processes on Linux (DECISIONS 7, 8; reference §6.2, §6.3, §6.11).

Services run under a small POSIX sh wrapper (``wrapper.sh``) that leads their session and
records their exit status to a file; jobs run once with captured output. Nothing here knows about
workspaces or events: the orchestration above records what these functions report.
"""

from __future__ import annotations

from runtime_supervisor.adapters.process.inspect import (
    ExitStatus,
    alive,
    group_members,
    last_output,
    proc_start_time,
    read_status,
)
from runtime_supervisor.adapters.process.jobs import JOB_OUTPUT_CAP, JobResult, run_job
from runtime_supervisor.adapters.process.logs import LogSlice, read_range, tail_bytes, tail_lines
from runtime_supervisor.adapters.process.ports import (
    PortAllocator,
    PortConflict,
    PortsExhausted,
    parse_port_range,
)
from runtime_supervisor.adapters.process.readiness import NotReady, wait_ready
from runtime_supervisor.adapters.process.spawn import Spawned, SpawnError, spawn_service
from runtime_supervisor.adapters.process.stop import StopOutcome, stop_group
from runtime_supervisor.adapters.process.watch import reap_child, wait_exit

__all__ = [
    "JOB_OUTPUT_CAP",
    "ExitStatus",
    "JobResult",
    "LogSlice",
    "NotReady",
    "PortAllocator",
    "PortConflict",
    "PortsExhausted",
    "SpawnError",
    "Spawned",
    "StopOutcome",
    "alive",
    "group_members",
    "last_output",
    "parse_port_range",
    "proc_start_time",
    "read_range",
    "read_status",
    "reap_child",
    "run_job",
    "spawn_service",
    "stop_group",
    "tail_bytes",
    "tail_lines",
    "wait_exit",
    "wait_ready",
]
