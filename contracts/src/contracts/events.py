"""The union of every public event, decoded by one decoder (inbox consumers, the CLI, SSE)."""

from __future__ import annotations

from typing import get_args

from contracts.base import Event
from contracts.gateway import ApiKeyCreated, ApiKeyRevoked, CompanyCreated
from contracts.service import InboxMessageRejected, OperationFinished, OperationStarted

__all__ = ["ALL_EVENT_TYPES", "AnyEvent"]

AnyEvent = (
    CompanyCreated
    | ApiKeyCreated
    | ApiKeyRevoked
    | OperationStarted
    | OperationFinished
    | InboxMessageRejected
)

ALL_EVENT_TYPES: tuple[type[Event], ...] = get_args(AnyEvent)
