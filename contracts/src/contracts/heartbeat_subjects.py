"""Subjects of agents, wakes, runs (controller), slots (supervisor) and run tokens (gateway)."""

from __future__ import annotations

from typing import Final

from contracts.subjects import command, query

__all__ = [
    "AGENT_CREATE",
    "AGENT_DELETE",
    "AGENT_GET",
    "AGENT_LIST",
    "AGENT_UPDATE",
    "AGENT_WAKE",
    "RUN_CANCEL",
    "RUN_GET",
    "RUN_LIST",
    "RUN_TOKEN_MINT",
    "SLOT_HEALTH",
    "SLOT_OF_RUN",
    "SLOT_RUN_LOG",
    "acquire_slot",
    "kill_adapter",
    "launch_adapter",
    "release_slot",
]

AGENT_CREATE: Final = command("agent", "create")
AGENT_UPDATE: Final = command("agent", "update")
AGENT_DELETE: Final = command("agent", "delete")
AGENT_GET: Final = query("agent", "get")
AGENT_LIST: Final = query("agent", "list")
AGENT_WAKE: Final = command("agent", "wake")
RUN_GET: Final = query("run", "get")
RUN_LIST: Final = query("run", "list")
RUN_CANCEL: Final = command("run", "cancel")
RUN_TOKEN_MINT: Final = command("run_token", "mint")
SLOT_OF_RUN: Final = query("slot", "of_run")
SLOT_RUN_LOG: Final = query("slot", "run_log")
SLOT_HEALTH: Final = query("slot", "health")


def acquire_slot(node: str) -> str:
    """``ws.cmd.slot.acquire.<node>``."""
    return command("slot", "acquire", node)


def launch_adapter(node: str) -> str:
    """``ws.cmd.slot.launch.<node>``."""
    return command("slot", "launch", node)


def kill_adapter(node: str) -> str:
    """``ws.cmd.slot.kill.<node>``."""
    return command("slot", "kill", node)


def release_slot(node: str) -> str:
    """``ws.cmd.slot.release.<node>``."""
    return command("slot", "release", node)
