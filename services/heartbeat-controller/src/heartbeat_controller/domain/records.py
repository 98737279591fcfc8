"""The plain records the controller's aggregates store in their events and keep as state.

Each is a ``TypedDict``: a dict at runtime, so the store encodes it exactly as the plain dicts
it replaced (same keys, same values), while mypy checks the keys and their types. ``JsonObject``
is JSON that someone else supplied and the controller passes on unread (a wake's payload, an
adapter's usage report) or keeps in its JSON form (a checked adapter config).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Literal, TypeAlias, TypedDict

if TYPE_CHECKING:
    from contracts.agents import AdapterType

__all__ = [
    "ActorRecord",
    "AgentChanges",
    "AgentField",
    "AgentRecord",
    "CopiedFields",
    "JsonObject",
    "JsonValue",
    "LaunchRecord",
    "RunAbout",
    "SlotRecord",
    "StageDetailRecord",
]

JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
"""Any JSON value."""
JsonObject: TypeAlias = "dict[str, JsonValue]"
"""A JSON object (as msgspec decodes one: plain dicts, lists and scalars)."""

AgentField = Literal[
    "name",
    "adapter_type",
    "adapter_config",
    "trust_level",
    "max_concurrent_runs",
    "heartbeat_interval_sec",
]
"""The name of a settable field of an agent (snake_case)."""


class AgentRecord(TypedDict):
    """The settable fields of an agent as they are (``Agent.record``; ``Agent.Updated``
    stores each of them as its own attribute)."""

    name: str
    adapter_type: AdapterType
    adapter_config: JsonObject
    """The checked config in its stored form (camelCase keys, every field)."""
    trust_level: str
    max_concurrent_runs: int
    heartbeat_interval_sec: int | None


class AgentChanges(TypedDict, total=False):
    """Some of an agent's settable fields, as an update asks for them."""

    name: str
    adapter_type: AdapterType
    adapter_config: JsonObject
    trust_level: str
    max_concurrent_runs: int
    heartbeat_interval_sec: int | None


class ActorRecord(TypedDict):
    """Who asked for a wake (``WakeupRequest.Requested.requested_by``): an ``Actor`` as plain
    data."""

    type: str
    id: str


class RunAbout(TypedDict):
    """What a run's event is about (``Run.Event.about``): its agent, issue and workspace then."""

    agent_id: str
    issue_id: str | None
    workspace_id: str | None


class SlotRecord(TypedDict):
    """The slot granted to a run (``Run.slot``, from ``Run.SlotGranted``)."""

    slot_id: str
    type: str
    index: int | None
    contained: bool
    sandbox: str


class LaunchRecord(TypedDict):
    """The adapter's launch (``Run.launch``, from ``Run.AdapterLaunched``): pids and deadline,
    never the run token."""

    slot_id: str
    pid: int | None
    pgid: int | None
    started_at: datetime
    deadline: datetime


class StageDetailRecord(TypedDict, total=False):
    """A stage change's detail as ``Run.StageChanged`` stores it: the camelCase fields of one of
    the ``stage_detail`` structs (``msgspec.to_builtins``), so only the keys of that one."""

    workspaceId: str
    created: bool
    services: list[str]
    slotId: str
    slotType: str
    contained: bool
    sandbox: str
    pid: int | None
    pgid: int | None
    deadline: str
    end: str
    status: str
    errorCode: str | None


class CopiedFields(TypedDict, total=False):
    """What the controller copies of a realizer's issue (``IssueCopy.Copied.fields``,
    ``IssueCopy.Noted.changes``): the fields an ``issue.*`` event said something about."""

    assignee_agent_id: str | None
    execution_workspace_id: str | None
    status: str | None
    deleted: bool
