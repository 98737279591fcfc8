"""Examples of the workspace messages (projects, project workspaces, issues, execution workspaces).

Loaded by ``examples.py``, which passes its envelope builder and principals in.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from contracts.base import Message, Principal
from contracts.drains import DrainNode, MarkNodeDraining, MoveIn, MoveInWorkspaces, UndrainNode
from contracts.execution_commands import (
    ArchiveWorkspace,
    GetCloseReadiness,
    GetExecutionWorkspace,
    GetWorkspaceEvents,
    GetWorkspaceHistory,
    GetWorkspaceOperation,
    GetWorkspaceOperationOutput,
    ListExecutionWorkspaces,
    ListExecutionWorkspaceSummaries,
    ListWorkspaceOperations,
    RealizeWorkspace,
    ReconcileBranch,
    ReopenWorkspace,
    StopWorkspaceRuntimeServices,
    UpdateExecutionWorkspace,
    WorkspaceFilters,
)
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
from contracts.execution_views import BranchInspection, RescueRefView
from contracts.nodes import GetNodeInfo, ListNodes
from contracts.workspace_commands import (
    AddWorkProduct,
    CreateIssue,
    CreateProject,
    CreateProjectWorkspace,
    DeleteIssue,
    DeleteProject,
    DeleteProjectWorkspace,
    GetIssue,
    GetProject,
    GetProjectWorkspace,
    ListIssues,
    ListProjects,
    ListProjectWorkspaces,
    ListWorkProducts,
    UpdateIssue,
    UpdateProject,
    UpdateProjectWorkspace,
)
from contracts.workspace_config import (
    ExecutionWorkspaceConfig,
    ExecutionWorkspaceConfigPatch,
    ExecutionWorkspacePolicy,
    ExecutionWorkspaceSettings,
    HttpReadiness,
    JobSpec,
    ManagedCheckout,
    PortSpec,
    RuntimeConfig,
    ServiceSpec,
    StopPolicy,
    WorkspaceStrategy,
)
from contracts.workspace_diff import GetWorkspaceDiff
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
from contracts.workspace_views import WorkProduct

WHEN = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
COMPANY = "0b5f0c1e-4a43-4c8e-9c1e-1c2f3a4b5c6d"
PROJECT = "1c6a1d2f-5b54-4d9f-8d2f-2d3e4f5a6b7c"
PWS = "2d7b2e30-6c65-4e0a-9e30-3e4f5a6b7c8d"
ISSUE = "3e8c3f41-7d76-4f1b-8f41-4f5a6b7c8d9e"
WS = "6e2b4d0f-9a8c-4f3e-8b2c-4d5e6f7a8b9c"
OP = "7f3c5e1a-0b9d-4a4f-9c3d-5e6f7a8b9c0d"
BRANCH = "acme-12-fix-login"

STRATEGY = WorkspaceStrategy(
    type="git_worktree",
    base_ref="origin/main",
    branch_template="{{issue.identifier}}-{{issue.title}}",
    provision_command="make setup",
)
POLICY = ExecutionWorkspacePolicy(
    enabled=True, default_mode="isolated_workspace", workspace_strategy=STRATEGY
)
RUNTIME = RuntimeConfig(
    services=[
        ServiceSpec(
            name="web",
            command="npm run dev -- --port {{port}}",
            port=PortSpec(type="auto"),
            readiness=HttpReadiness(url_template="http://127.0.0.1:{{port}}/", timeout_sec=30),
            lifecycle="shared",
            stop_policy=StopPolicy(type="idle_timeout", idle_seconds=1800),
        )
    ],
    jobs=[JobSpec(name="hello", command="echo hello", timeout_sec=60)],
)
RESCUE = RescueRefView(
    ref=f"refs/clipyard/rescue/{WS}/1", sha="a" * 40, file_count=2, generation=1, created_at=WHEN
)
INSPECTION = BranchInspection(
    worktree_path=f"/home/u/.clipyard/worktrees/{PWS}/{BRANCH}",
    from_branch=BRANCH,
    to_branch="acme-12-renamed",
    from_sha="b" * 40,
    to_sha="c" * 40,
    ancestry_verdict="ancestor",
    cleanliness="clean",
)


def build(envelope: Callable[..., dict[str, Any]], principal: Principal) -> list[Message]:
    """Every workspace message, once each."""
    p = principal
    return [
        CreateProject(
            principal=p, company_id=COMPANY, name="Web", execution_workspace_policy=POLICY
        ),
        UpdateProject(principal=p, project_id=PROJECT, name="Web app"),
        DeleteProject(principal=p, project_id=PROJECT),
        GetProject(principal=p, project_id=PROJECT),
        ListProjects(principal=p, company_id=COMPANY, limit=20, offset=0),
        CreateProjectWorkspace(
            principal=p,
            project_id=PROJECT,
            name="main",
            repo_url="https://github.com/acme/web.git",
            repo_ref="main",
            is_primary=True,
            runtime_config=RUNTIME,
        ),
        UpdateProjectWorkspace(principal=p, project_id=PROJECT, workspace_id=PWS, cwd=None),
        DeleteProjectWorkspace(principal=p, project_id=PROJECT, workspace_id=PWS),
        GetProjectWorkspace(principal=p, project_id=PROJECT, workspace_id=PWS),
        ListProjectWorkspaces(principal=p, project_id=PROJECT),
        CreateIssue(
            principal=p,
            company_id=COMPANY,
            title="Fix login",
            project_id=PROJECT,
            status="todo",
            execution_workspace_settings=ExecutionWorkspaceSettings(mode="isolated_workspace"),
            priority="high",
        ),
        UpdateIssue(principal=p, issue_id=ISSUE, status="in_progress", assignee_agent_id=None),
        DeleteIssue(principal=p, issue_id=ISSUE),
        GetIssue(principal=p, issue_id=ISSUE),
        ListIssues(principal=p, company_id=COMPANY, statuses=["todo", "in_progress"]),
        AddWorkProduct(
            principal=p,
            issue_id=ISSUE,
            product_type="pull_request",
            url="https://github.com/acme/web/pull/7",
        ),
        ListWorkProducts(principal=p, issue_id=ISSUE),
        RealizeWorkspace(principal=p, issue_id=ISSUE, mode="isolated_workspace"),
        UpdateExecutionWorkspace(
            principal=p,
            workspace_id=WS,
            status="archived",
            config=ExecutionWorkspaceConfigPatch(teardown_command=None),
        ),
        ArchiveWorkspace(principal=p, workspace_id=WS, expected_generation=0),
        ReopenWorkspace(principal=p, workspace_id=WS),
        ReconcileBranch(principal=p, workspace_id=WS, mode="override", reason="renamed upstream"),
        GetExecutionWorkspace(principal=p, workspace_id=WS),
        ListExecutionWorkspaces(
            principal=p,
            company_id=COMPANY,
            filters=WorkspaceFilters(project_id=PROJECT, statuses=["active", "idle"]),
        ),
        ListExecutionWorkspaceSummaries(
            principal=p, company_id=COMPANY, filters=WorkspaceFilters(reuse_eligible=True)
        ),
        GetCloseReadiness(principal=p, workspace_id=WS),
        GetWorkspaceDiff(principal=p, workspace_id=WS, path="src/app.py"),
        ListWorkspaceOperations(principal=p, workspace_id=WS),
        GetWorkspaceOperation(principal=p, operation_id=OP),
        GetWorkspaceOperationOutput(principal=p, operation_id=OP, stream="stderr", offset=10),
        GetWorkspaceEvents(principal=p, workspace_id=WS, limit=100),
        GetWorkspaceHistory(principal=p, workspace_id=WS, version=3),
        StopWorkspaceRuntimeServices(principal=p, workspace_id=WS, lifecycle_generation=0),
        ProjectCreated(**envelope("project"), name="Web", execution_workspace_policy=POLICY),
        ProjectUpdated(
            **envelope("project", 2),
            name="Web app",
            execution_workspace_policy=POLICY,
            changed_fields=["name"],
        ),
        ProjectDeleted(**envelope("project", 3)),
        ProjectWorkspaceCreated(
            **envelope("project_workspace"),
            project_id=PROJECT,
            name="main",
            cwd=None,
            repo_url="https://github.com/acme/web.git",
            repo_ref="main",
            is_primary=True,
            runtime_config=RUNTIME,
            managed_checkout=ManagedCheckout(state="cloning", operation_id=OP),
        ),
        ProjectWorkspaceUpdated(
            **envelope("project_workspace", 3),
            project_id=PROJECT,
            name="main",
            cwd=None,
            repo_url="https://github.com/acme/web.git",
            repo_ref="develop",
            is_primary=True,
            changed_fields=["repoRef"],
        ),
        ProjectWorkspaceRuntimeConfigChanged(
            **envelope("project_workspace", 4), project_id=PROJECT, runtime_config=RUNTIME
        ),
        ProjectWorkspaceCheckoutChanged(
            **envelope("project_workspace", 2),
            project_id=PROJECT,
            managed_checkout=ManagedCheckout(
                state="ready", path=f"/home/u/.clipyard/checkouts/{PROJECT}/web"
            ),
        ),
        ProjectWorkspaceMoved(
            **envelope("project_workspace", 4),
            project_id=PROJECT,
            from_node="nodeb",
            to_node="local",
        ),
        ProjectWorkspaceDeleted(**envelope("project_workspace", 5), project_id=PROJECT),
        IssueCreated(
            **envelope("issue"),
            project_id=PROJECT,
            identifier="ACME-12",
            title="Fix login",
            status="todo",
            priority="high",
            execution_workspace_settings=ExecutionWorkspaceSettings(mode="isolated_workspace"),
        ),
        IssueUpdated(
            **envelope("issue", 2),
            project_id=PROJECT,
            identifier="ACME-12",
            title="Fix the login form",
            changed_fields=["title"],
        ),
        IssueAssigned(
            **envelope("issue", 3), assignee_agent_id="8a4d6f2b-1cae-4b5a-8d4e-6f7a8b9c0d1e"
        ),
        IssueStatusChanged(
            **envelope("issue", 4), from_status="todo", to_status="in_progress", is_terminal=False
        ),
        IssueWorkspaceLinked(**envelope("issue", 5), execution_workspace_id=WS),
        IssueCommented(**envelope("issue", 6), comment="Started on it."),
        IssueWorkProductAdded(
            **envelope("issue", 7),
            work_product=WorkProduct(
                id="9b5e7a3c-2dbf-4c6b-9e5f-7a8b9c0d1e2f",
                company_id=COMPANY,
                issue_id=ISSUE,
                type="pull_request",
                url="https://github.com/acme/web/pull/7",
                created_at=WHEN,
                updated_at=WHEN,
            ),
        ),
        IssueDeleted(**envelope("issue", 8), identifier="ACME-12"),
        WorkspaceRealized(
            **envelope("workspace"),
            project_id=PROJECT,
            project_workspace_id=PWS,
            source_issue_id=ISSUE,
            mode="isolated_workspace",
            strategy_type="git_worktree",
            provider_type="git_worktree",
            provider_ref=f"/home/u/.clipyard/worktrees/{PWS}/{BRANCH}",
            name=BRANCH,
            status="active",
            cwd=f"/home/u/.clipyard/worktrees/{PWS}/{BRANCH}",
            repo_url="https://github.com/acme/web.git",
            base_ref="origin/main",
            base_sha="d" * 40,
            branch_name=BRANCH,
            node_id="local",
            created_worktree=True,
            config=ExecutionWorkspaceConfig(teardown_command="make down"),
            operation_id=OP,
            warnings=["fetch failed: using the local main"],
        ),
        WorkspaceReused(**envelope("workspace", 2), issue_id=ISSUE, last_used_at=WHEN),
        WorkspaceStatusChanged(
            **envelope("workspace", 3),
            from_status="active",
            to_status="idle",
            lifecycle_generation=0,
        ),
        WorkspaceArchived(
            **envelope("workspace", 4),
            lifecycle_generation=1,
            closed_at=WHEN,
            rescue_ref=RESCUE,
            branch_name=BRANCH,
            branch_deleted=False,
            branch_kept_reason="the branch holds 1 commit not delivered to origin/main",
            worktree_removed=True,
            operation_id=OP,
        ),
        WorkspaceArchiveStarted(
            **envelope("workspace", 4), lifecycle_generation=1, trigger="manual"
        ),
        WorkspaceCleanupFailed(
            **envelope("workspace", 5),
            lifecycle_generation=1,
            cleanup_reason="the worktree directory still exists",
        ),
        WorkspaceReopened(
            **envelope("workspace", 6),
            lifecycle_generation=2,
            cwd=f"/home/u/.clipyard/worktrees/{PWS}/{BRANCH}",
            branch_name=BRANCH,
            restored_from=RESCUE,
        ),
        WorkspaceMoved(
            **envelope("workspace", 7),
            from_node="nodeb",
            to_node="local",
            cwd=f"/home/u/.clipyard/worktrees/{PWS}/{BRANCH}",
            branch_name=BRANCH,
            lifecycle_generation=2,
            rescue_ref=RESCUE,
        ),
        DrainNode(principal=principal, node_id="nodeb", reason="host maintenance"),
        UndrainNode(principal=principal, node_id="nodeb"),
        ListNodes(principal=principal, parts=False),
        GetNodeInfo(principal=principal),
        MarkNodeDraining(principal=principal, node_id="nodeb", reason="host maintenance"),
        MoveInWorkspaces(
            principal=principal,
            project_workspace_id=PWS,
            from_node="nodeb",
            workspaces=[
                MoveIn(
                    workspace_id="8f9a0b1c-2d3e-4f50-8a6b-7c8d9e0f1a2b",
                    rescue_ref="refs/clipyard/moves/8f9a0b1c-2d3e-4f50-8a6b-7c8d9e0f1a2b",
                    rescue_sha="3f786850e387550fdab836ed7e6dc881de23001b",
                    file_count=2,
                    home_relative=f"worktrees/{PWS}/{BRANCH}",
                    services=["web"],
                )
            ],
        ),
        WorkspaceReopenFailed(
            **envelope("workspace", 7), lifecycle_generation=3, error="the base checkout is gone"
        ),
        WorkspaceBranchReconciled(
            **envelope("workspace", 8),
            mode="forward",
            inspection=INSPECTION,
            branch_name="acme-12-renamed",
            name="acme-12-renamed",
        ),
        WorkspaceConfigChanged(
            **envelope("workspace", 9),
            config=ExecutionWorkspaceConfig(cleanup_command="rm -rf tmp"),
            changed_keys=["cleanupCommand"],
        ),
        WorkspaceRenamed(**envelope("workspace", 10), name="login work"),
        WorkspaceCleanupScheduled(**envelope("workspace", 11), cleanup_eligible_at=WHEN),
    ]
