"""What a run's stage change records about the stage it leaves or enters (``RunStageChanged``'s
``detail``): typed here, stored and published as their camelCase fields."""

from __future__ import annotations

from typing import Literal

from contracts.base import Struct
from contracts.slots import SlotType

__all__ = [
    "CleanupDetail",
    "EndDetail",
    "LaunchDetail",
    "SlotDetail",
    "StageDetail",
    "WorkspaceDetail",
]


class WorkspaceDetail(Struct, frozen=True, kw_only=True):
    """Entering ``slot_acquisition`` after the workspace was realized: which workspace, whether
    it was created, and the run's services."""

    workspace_id: str
    created: bool
    services: list[str]


class SlotDetail(Struct, frozen=True, kw_only=True):
    """Entering ``adapter_launch``: the slot granted."""

    slot_id: str
    slot_type: SlotType
    contained: bool
    sandbox: Literal["bwrap", "user_only", "none"]


class LaunchDetail(Struct, frozen=True, kw_only=True):
    """Entering ``result_collection``: the adapter's process and its deadline (ISO 8601)."""

    pid: int | None
    pgid: int | None
    deadline: str


class EndDetail(Struct, frozen=True, kw_only=True):
    """Entering ``result_collection`` because the adapter's end arrived first: how it ended."""

    end: str


class CleanupDetail(Struct, frozen=True, kw_only=True):
    """Entering ``cleanup``: how the run ends."""

    status: str
    error_code: str | None


StageDetail = WorkspaceDetail | SlotDetail | LaunchDetail | EndDetail | CleanupDetail
"""Any stage change's detail."""
