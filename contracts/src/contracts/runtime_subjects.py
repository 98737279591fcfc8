"""Subjects of the runtime-supervisor's commands and queries, built with :mod:`contracts.subjects`.

Host-bound commands (they start or stop processes of one node) take the node token. The
supervisor's workspace operations, operation output and workspace events are served on its
service-wide subjects (``ws.qry.supervisor.workspace_operations`` and so on, see
:mod:`contracts.workspace_subjects`).
"""

from __future__ import annotations

from typing import Final

from contracts.subjects import command, query

__all__ = [
    "RUNTIME_LOG",
    "RUNTIME_STATE",
    "RUNTIME_SUMMARIES",
    "ensure_run_services",
    "run_ended",
    "runtime_control",
]

RUNTIME_STATE: Final = query("runtime_service", "state")
RUNTIME_LOG: Final = query("runtime_service", "log")
RUNTIME_SUMMARIES: Final = query("runtime_service", "summaries")


def runtime_control(node: str) -> str:
    """``ws.cmd.runtime_service.control.<node>``: start, stop, restart a service or run a job."""
    return command("runtime_service", "control", node)


def ensure_run_services(node: str) -> str:
    """``ws.cmd.runtime_service.ensure_for_run.<node>``: a run's services, with leases for it."""
    return command("runtime_service", "ensure_for_run", node)


def run_ended(node: str) -> str:
    """``ws.cmd.runtime_service.run_ended.<node>``: a finished run's slot and released services,
    acted on by the node that holds them."""
    return command("runtime_service", "run_ended", node)
