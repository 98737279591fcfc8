"""Domain of the runtime-supervisor: aggregates with past-tense events, the values built from
them, and errors. Pure: no I/O."""

from __future__ import annotations

from runtime_supervisor.domain.copies import COPY_KINDS, CopyKind, UpstreamCopy, copy_id
from runtime_supervisor.domain.egress import EgressSeen, EgressVerdict, egress_id
from runtime_supervisor.domain.errors import (
    ContainmentError,
    CopiesBehindError,
    InvalidInputError,
    LeaseConflictError,
    NotFoundError,
    PortConflictError,
    PortsExhaustedError,
    ProvisioningFailedError,
    RuntimeSupervisorError,
    StartFailedError,
    StateConflictError,
)
from runtime_supervisor.domain.operations import EXCERPT_BYTES, SupervisorOperation, excerpt
from runtime_supervisor.domain.service_record import LIVE_STATUSES, ServiceRecord
from runtime_supervisor.domain.services import RuntimeService
from runtime_supervisor.domain.slot import (
    LIVE_SLOT_STATES,
    AdapterSlot,
    RunFinishedError,
    SandboxUnavailableError,
    SlotUnavailableError,
)
from runtime_supervisor.domain.targets import IssueBrief, RunBrief, RuntimeTarget
from runtime_supervisor.domain.workspaces import (
    Provisioning,
    TargetKind,
    WorkspaceRuntime,
    parse_target_key,
    runtime_id,
    target_key,
)

__all__ = [
    "COPY_KINDS",
    "EXCERPT_BYTES",
    "LIVE_SLOT_STATES",
    "LIVE_STATUSES",
    "AdapterSlot",
    "ContainmentError",
    "CopiesBehindError",
    "CopyKind",
    "EgressSeen",
    "EgressVerdict",
    "InvalidInputError",
    "IssueBrief",
    "LeaseConflictError",
    "NotFoundError",
    "PortConflictError",
    "PortsExhaustedError",
    "Provisioning",
    "ProvisioningFailedError",
    "RunBrief",
    "RunFinishedError",
    "RuntimeService",
    "RuntimeSupervisorError",
    "RuntimeTarget",
    "SandboxUnavailableError",
    "ServiceRecord",
    "SlotUnavailableError",
    "StartFailedError",
    "StateConflictError",
    "SupervisorOperation",
    "TargetKind",
    "UpstreamCopy",
    "WorkspaceRuntime",
    "copy_id",
    "egress_id",
    "excerpt",
    "parse_target_key",
    "runtime_id",
    "target_key",
]
