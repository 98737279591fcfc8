"""The union of every public event, decoded by one decoder (inbox consumers, the CLI, SSE)."""

from __future__ import annotations

from typing import get_args

from contracts.base import Event
from contracts.credential_events import (
    CredentialResolved,
    SecretCreated,
    SecretDeleted,
    SecretRotated,
)
from contracts.egress_events import EgressObserved, EgressTallied
from contracts.execution_events import (
    WorkspaceArchived,
    WorkspaceArchiveStarted,
    WorkspaceBranchReconciled,
    WorkspaceCleanupFailed,
    WorkspaceCleanupScheduled,
    WorkspaceConfigChanged,
    WorkspaceMoved,
    WorkspaceRealized,
    WorkspaceRenamed,
    WorkspaceReopened,
    WorkspaceReopenFailed,
    WorkspaceReused,
    WorkspaceStatusChanged,
)
from contracts.gateway import (
    ApiKeyCreated,
    ApiKeyRevoked,
    CompanyCreated,
    CompanyHostAccessChanged,
)
from contracts.run_events import (
    AgentCreated,
    AgentDeleted,
    AgentUpdated,
    RunCancelRequested,
    RunFinished,
    RunQueued,
    RunStageChanged,
    RunStarted,
    RunWorkspaceLeased,
    RunWorkspaceReleased,
    WakeupCoalesced,
    WakeupRequested,
)
from contracts.runtime_events import (
    RuntimeProvisioningFailed,
    RuntimeProvisioningStarted,
    RuntimeProvisioningSucceeded,
    RuntimeServiceAdopted,
    RuntimeServiceDesiredStateChanged,
    RuntimeServiceFailed,
    RuntimeServiceHealthChanged,
    RuntimeServiceLeaseAcquired,
    RuntimeServiceLeaseReleased,
    RuntimeServiceStarted,
    RuntimeServiceStartFailed,
    RuntimeServiceStarting,
    RuntimeServiceStopped,
)
from contracts.service import (
    InboxMessageRejected,
    OperationFinished,
    OperationProgressed,
    OperationStarted,
)
from contracts.slot_events import (
    SlotAdapterFinished,
    SlotAdapterStarted,
    SlotGranted,
    SlotReleased,
)
from contracts.workspace_events import (
    IssueAssigned,
    IssueCommented,
    IssueCreated,
    IssueDeleted,
    IssueStatusChanged,
    IssueUpdated,
    IssueWorkProductAdded,
    IssueWorkspaceLinked,
    ProjectCreated,
    ProjectDeleted,
    ProjectUpdated,
    ProjectWorkspaceCheckoutChanged,
    ProjectWorkspaceCreated,
    ProjectWorkspaceDeleted,
    ProjectWorkspaceMoved,
    ProjectWorkspaceRuntimeConfigChanged,
    ProjectWorkspaceUpdated,
)

__all__ = ["ALL_EVENT_TYPES", "AnyEvent"]

AnyEvent = (
    CompanyCreated
    | CompanyHostAccessChanged
    | ApiKeyCreated
    | ApiKeyRevoked
    | OperationStarted
    | OperationFinished
    | OperationProgressed
    | InboxMessageRejected
    | ProjectCreated
    | ProjectUpdated
    | ProjectDeleted
    | ProjectWorkspaceCreated
    | ProjectWorkspaceUpdated
    | ProjectWorkspaceRuntimeConfigChanged
    | ProjectWorkspaceCheckoutChanged
    | ProjectWorkspaceDeleted
    | ProjectWorkspaceMoved
    | IssueCreated
    | IssueUpdated
    | IssueAssigned
    | IssueStatusChanged
    | IssueWorkspaceLinked
    | IssueCommented
    | IssueWorkProductAdded
    | IssueDeleted
    | WorkspaceRealized
    | WorkspaceReused
    | WorkspaceStatusChanged
    | WorkspaceArchiveStarted
    | WorkspaceArchived
    | WorkspaceCleanupFailed
    | WorkspaceReopened
    | WorkspaceMoved
    | WorkspaceReopenFailed
    | WorkspaceBranchReconciled
    | WorkspaceConfigChanged
    | WorkspaceRenamed
    | WorkspaceCleanupScheduled
    | SecretCreated
    | SecretRotated
    | SecretDeleted
    | CredentialResolved
    | AgentCreated
    | AgentUpdated
    | AgentDeleted
    | WakeupRequested
    | WakeupCoalesced
    | RunQueued
    | RunStarted
    | RunStageChanged
    | RunWorkspaceLeased
    | RunWorkspaceReleased
    | RunCancelRequested
    | RunFinished
    | SlotGranted
    | SlotAdapterStarted
    | SlotAdapterFinished
    | SlotReleased
    | RuntimeServiceStarting
    | EgressObserved
    | EgressTallied
    | RuntimeServiceStarted
    | RuntimeServiceStartFailed
    | RuntimeServiceStopped
    | RuntimeServiceFailed
    | RuntimeServiceAdopted
    | RuntimeServiceLeaseAcquired
    | RuntimeServiceLeaseReleased
    | RuntimeServiceHealthChanged
    | RuntimeServiceDesiredStateChanged
    | RuntimeProvisioningStarted
    | RuntimeProvisioningSucceeded
    | RuntimeProvisioningFailed
)

ALL_EVENT_TYPES: tuple[type[Event], ...] = get_args(AnyEvent)
