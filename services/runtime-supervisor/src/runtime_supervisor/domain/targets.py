"""What the supervisor knows of a target, an issue and a run, built from its copies: immutable
values the orchestration and the pure rules use off the store's thread."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from contracts.workspace_config import ExecutionWorkspaceConfig, RuntimeConfig
from runtime_supervisor.domain.leases import TERMINAL_RUN_STATUSES
from runtime_supervisor.domain.workspaces import TargetKind

__all__ = [
    "OPEN_WORKSPACE_STATUSES",
    "TERMINAL_ISSUE_STATUSES",
    "TERMINAL_RUN_STATUSES",
    "IssueBrief",
    "RunBrief",
    "RuntimeTarget",
]

OPEN_WORKSPACE_STATUSES: Final = frozenset({"active", "idle", "in_review"})
TERMINAL_ISSUE_STATUSES: Final = frozenset({"done", "cancelled"})


@dataclass(frozen=True, slots=True)
class IssueBrief:
    """An issue as the realizer last said (``status`` None: no status event seen yet)."""

    id: str
    company_id: str | None
    identifier: str | None
    title: str | None
    status: str | None
    deleted: bool = False

    @property
    def terminal(self) -> bool:
        """``done`` or ``cancelled``."""
        return self.status in TERMINAL_ISSUE_STATUSES


@dataclass(frozen=True, slots=True)
class RunBrief:
    """A heartbeat run as the controller last said."""

    id: str
    company_id: str | None
    status: str
    agent_id: str | None
    issue_id: str | None
    workspace_id: str | None
    error_code: str | None = None

    @property
    def terminal(self) -> bool:
        """The run ended, whatever the outcome."""
        return self.status in TERMINAL_RUN_STATUSES


@dataclass(frozen=True, slots=True)
class RuntimeTarget:
    """An execution workspace or a project workspace whose runtime the supervisor controls.

    ``own_runtime`` is the target's own runtime config (an execution workspace's
    ``config.workspaceRuntime``; a project workspace's ``runtimeConfig``); ``project_runtime``
    the linked project workspace's, for an execution workspace (reference §6.1 inheritance).
    ``checkout_version`` counts the checkouts the workspace had (a rebuilt or reopened worktree
    needs runtime provisioning again).
    """

    kind: TargetKind
    key: str
    company_id: str
    execution_workspace_id: str | None
    project_workspace_id: str | None
    project_id: str | None
    name: str | None
    mode: str | None
    status: str | None
    closing: bool
    cwd: str | None
    node_id: str | None
    repo_url: str | None
    base_ref: str | None
    branch_name: str | None
    lifecycle_generation: int
    checkout_version: int
    source_issue: IssueBrief | None
    workspace_config: ExecutionWorkspaceConfig | None
    own_runtime: RuntimeConfig | None
    project_runtime: RuntimeConfig | None
    runtime_provision_command: str | None
    project_workspace_cwd: str | None = None

    @property
    def id(self) -> str:
        """The target's own id (the execution or the project workspace's)."""
        found = (
            self.execution_workspace_id
            if self.kind == "execution_workspace"
            else self.project_workspace_id
        )
        assert found is not None
        return found

    @property
    def inherited(self) -> bool:
        """An execution workspace without its own runtime config, using its project
        workspace's."""
        return (
            self.kind == "execution_workspace"
            and self.own_runtime is None
            and (self.project_runtime is not None)
        )

    @property
    def effective_runtime(self) -> RuntimeConfig | None:
        """The runtime config in force: the target's own, else its project workspace's."""
        return self.own_runtime if self.own_runtime is not None else self.project_runtime

    @property
    def is_open(self) -> bool:
        """Services may start: the workspace is open and not being archived (a project
        workspace always is, while it exists)."""
        if self.kind == "project_workspace":
            return True
        return self.status in OPEN_WORKSPACE_STATUSES and not self.closing

    @property
    def label(self) -> str:
        """``execution workspace <id>`` / ``project workspace <id>`` (errors name owners so)."""
        return f"{self.kind.replace('_', ' ')} {self.id}"
