"""The one place where the workspace-realizer's stored domain events become public contracts."""

from __future__ import annotations

from typing import Any

from contracts.base import Event

__all__ = ["to_contract"]


def to_contract(domain_event: Any) -> Event | None:
    """The public event for a stored one, or ``None`` when it stays private."""
    return None
