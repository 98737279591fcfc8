"""Agent scripts run by the ``process`` adapter in the end-to-end tests and benchmarks.

:func:`agent_config` builds a ``process`` adapter config running :file:`agent.py` as
``/usr/bin/python3 -c <source>`` (nothing to install in the sandbox: the system's Python and the
script on the command line).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["AGENT_SOURCE", "PYTHON", "agent_command", "agent_config"]

AGENT_SOURCE = (Path(__file__).parent / "agent.py").read_text()
"""The agent script's source."""

PYTHON = "/usr/bin/python3"
"""The system's Python: visible in the sandbox (the venv's and pyenv's are not)."""


def agent_command() -> list[str]:
    """The agent's argv."""
    return [PYTHON, "-c", AGENT_SOURCE]


def agent_config(role: str, *, timeout_sec: int = 60, **env: str) -> dict[str, Any]:
    """A ``process`` adapter config running the agent in ``role`` with ``AGENT_*`` variables.

    Args:
        role: ``honest``, ``hostile``, ``stubborn``, ``sleeper`` or ``logger``.
        timeout_sec: The run's wall-clock timeout.
        **env: More variables (``AGENT_SLEEP="2"``...).

    Returns:
        The ``adapterConfig`` body.
    """
    return {
        "command": agent_command(),
        "env": {"AGENT_ROLE": role, **env},
        "timeoutSec": timeout_sec,
    }
