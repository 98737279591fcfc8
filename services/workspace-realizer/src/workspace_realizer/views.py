"""Read-model aggregates -> the contract views the realizer answers with (built on the store's
thread, where the read models are consistent)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import msgspec

from contracts import execution_views as ev
from contracts import workspace_views as wv
from contracts.workspace_config import (
    ExecutionWorkspaceConfig,
    ExecutionWorkspacePolicy,
    ExecutionWorkspaceSettings,
    JobSpec,
    ManagedCheckout,
    RuntimeCommandSpec,
    RuntimeConfig,
    ServiceSpec,
)
from servicekit import workspace_audit

if TYPE_CHECKING:
    from workspace_realizer.domain import (
        ExecutionWorkspace,
        Issue,
        Project,
        ProjectWorkspace,
        WorkspaceOperation,
    )
    from workspace_realizer.facts import CloseFacts, Delivery
    from workspace_realizer.readiness import Readiness
    from workspace_realizer.readmodels import RealizerReadModels

__all__ = [
    "issue_view",
    "managed_checkout",
    "operation_detail",
    "operation_row",
    "project_view",
    "project_workspace_view",
    "readiness_view",
    "rescue_view",
    "summary_view",
    "work_product_view",
    "workspace_row",
    "workspace_view",
]


def _convert(value: Any, kind: type[Any]) -> Any:
    return None if value is None else msgspec.convert(value, kind)


def project_view(project: Project, *, redacted: bool = False) -> wv.Project:
    """``{id, companyId, name, executionWorkspacePolicy, createdAt, updatedAt}``.

    ``redacted`` (agent keys and run tokens, ``Access.redacted(Resource.PROJECT)``): the policy's
    ``workspaceStrategy.worktreeParentDir`` (a host path) is null; the rest, commands included,
    is kept (ARCHITECTURE §5.1).
    """
    policy = _convert(project.policy, ExecutionWorkspacePolicy) or ExecutionWorkspacePolicy()
    if redacted:
        strategy = msgspec.structs.replace(policy.workspace_strategy, worktree_parent_dir=None)
        policy = msgspec.structs.replace(policy, workspace_strategy=strategy)
    return wv.Project(
        id=str(project.id),
        company_id=project.company_id,
        name=project.name,
        execution_workspace_policy=policy,
        created_at=project.created_on,
        updated_at=project.modified_on,
    )


def managed_checkout(workspace: ProjectWorkspace) -> ManagedCheckout:
    """The managed clone's state (``none`` for a workspace with a local checkout)."""
    return ManagedCheckout(
        state=workspace.checkout_state,
        path=workspace.checkout_path,
        error=workspace.checkout_error,
        operation_id=workspace.checkout_operation_id,
    )


def project_workspace_view(
    workspace: ProjectWorkspace, *, redacted: bool = False
) -> wv.ProjectWorkspace:
    """A project workspace as the API shows it.

    ``redacted`` (agent keys and run tokens, ``Access.redacted(Resource.PROJECT_WORKSPACE)``,
    ARCHITECTURE §5.1): no ``env`` and no host paths. Each runtime command's ``env`` is dropped
    whole (null), keys included: the contract's ``env`` maps names to strings, so a key cannot
    stay without its value, and the supervisor, not the agent, runs the commands. ``cwd``,
    ``managedCheckout.path`` and an absolute (``/``, ``~``, ``$``) ``cwd`` of a runtime command
    are null; a command's relative ``cwd`` (inside the workspace) and the command texts stay.
    ``repoUrl`` of a local repository (a ``file:`` URL, an absolute, ``~`` or ``$`` path, a
    relative path) is null; a remote one loses its userinfo (``user:token@``), query and
    fragment (``https://user:token@host/x.git`` -> ``https://host/x.git``, ``git@host:x.git``
    -> ``host:x.git``). Board reads are not redacted.
    """
    checkout = managed_checkout(workspace)
    config = _convert(workspace.runtime_config, RuntimeConfig)
    if redacted:
        checkout = msgspec.structs.replace(checkout, path=None)
        config = _redacted_runtime(config)
    return wv.ProjectWorkspace(
        id=str(workspace.id),
        company_id=workspace.company_id,
        project_id=workspace.project_id,
        name=workspace.name,
        cwd=None if redacted else workspace.cwd,
        repo_url=_agent_repo_url(workspace.repo_url) if redacted else workspace.repo_url,
        repo_ref=workspace.repo_ref,
        is_primary=workspace.is_primary,
        setup_command=workspace.setup_command,
        cleanup_command=workspace.cleanup_command,
        runtime_config=config,
        managed_checkout=checkout,
        created_at=workspace.created_on,
        updated_at=workspace.modified_on,
    )


_Spec = TypeVar("_Spec", ServiceSpec, JobSpec, RuntimeCommandSpec)
"""A runtime entry: each has an ``env`` and a ``cwd``."""


def _host_path(path: str | None) -> bool:
    return path is not None and path.startswith(("/", "~", "$"))


def _agent_repo_url(url: str | None) -> str | None:
    """``url`` as an agent reads it: None for a local repository, else without userinfo, query
    and fragment (:func:`project_workspace_view`)."""
    if url is None or _host_path(url) or url.lower().startswith("file:"):
        return None
    scheme, sep, rest = url.partition("://")
    if sep:
        # The authority ends at the first "/", "?" or "#" (RFC 3986); its userinfo at its last "@".
        authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
        path = re.split(r"[?#]", rest[len(authority) :], maxsplit=1)[0]
        return f"{scheme}://{authority.rpartition('@')[2]}{path}"
    head = url.split("/", 1)[0]
    if ":" not in head:
        return None  # no ":" before the first "/": git reads it as a (relative) local path
    # scp-like ``[user@]host:path``: the user ends at the last "@" before the first "/".
    return url[head.rfind("@") + 1 :]


def _redacted_runtime(config: RuntimeConfig | None) -> RuntimeConfig | None:
    """``config`` without any ``env`` and without absolute ``cwd`` values."""
    if config is None:
        return None

    def strip(entry: _Spec) -> _Spec:
        cwd = None if _host_path(entry.cwd) else entry.cwd
        return msgspec.structs.replace(entry, env=None, cwd=cwd)

    return RuntimeConfig(
        services=[strip(s) for s in config.services],
        jobs=[strip(j) for j in config.jobs],
        commands=[strip(c) for c in config.commands],
    )


def issue_view(issue: Issue) -> wv.Issue:
    """An issue as the API shows it."""
    return wv.Issue(
        id=str(issue.id),
        company_id=issue.company_id,
        project_id=issue.project_id,
        identifier=issue.identifier,
        title=issue.title,
        status=issue.status,  # type: ignore[arg-type]
        description=issue.description,
        priority=issue.priority,  # type: ignore[arg-type]
        parent_id=issue.parent_id,
        assignee_agent_id=issue.assignee_agent_id,
        project_workspace_id=issue.project_workspace_id,
        execution_workspace_settings=_convert(issue.settings, ExecutionWorkspaceSettings),
        execution_workspace_id=issue.execution_workspace_id,
        created_at=issue.created_on,
        updated_at=issue.modified_on,
    )


def work_product_view(company_id: str, issue_id: str, product: dict[str, Any]) -> wv.WorkProduct:
    """A stored work product as the API shows it."""
    created = datetime.fromisoformat(product["createdAt"])
    return wv.WorkProduct(
        id=product["id"],
        company_id=company_id,
        issue_id=issue_id,
        type=product["type"],
        url=product.get("url"),
        external_id=product.get("externalId"),
        title=product.get("title"),
        metadata=dict(product.get("metadata") or {}),
        execution_workspace_id=product.get("executionWorkspaceId"),
        created_at=created,
        updated_at=created,
    )


def rescue_view(ref: dict[str, Any]) -> ev.RescueRefView:
    """A stored rescue ref as the API shows it."""
    return ev.RescueRefView(
        ref=ref["ref"],
        sha=ref["sha"],
        file_count=ref.get("fileCount", 0),
        generation=ref.get("generation", 0),
        created_at=datetime.fromisoformat(ref["createdAt"]),
    )


def _row_fields(app: RealizerReadModels, ws: ExecutionWorkspace) -> dict[str, Any]:
    company = app.company_copy(ws.company_id)
    return {
        "id": str(ws.id),
        "company_id": ws.company_id,
        "project_id": ws.project_id,
        "project_workspace_id": ws.project_workspace_id,
        "source_issue_id": ws.source_issue_id,
        "mode": ws.mode,
        "strategy_type": ws.strategy_type,
        "provider_type": ws.provider_type,
        "provider_ref": ws.provider_ref,
        "name": ws.name,
        "status": ws.status,
        "cwd": ws.cwd,
        "repo_url": ws.repo_url,
        "base_ref": ws.base_ref,
        "branch_name": ws.branch_name,
        "node_id": ws.node_id,
        "config": _convert(ws.config, ExecutionWorkspaceConfig) if ws.config else None,
        "linked_issue_ids": [str(issue.id) for issue in app.issues_linked_to(ws)],
        "lifecycle_generation": ws.lifecycle_generation,
        "opened_at": ws.opened_at,
        "last_used_at": ws.last_used_at,
        "closed_at": ws.closed_at,
        "cleanup_eligible_at": ws.cleanup_eligible_at,
        "cleanup_reason": ws.cleanup_reason,
        "rescue_refs": [rescue_view(ref) for ref in ws.rescue_refs],
        "created_at": ws.created_on,
        "updated_at": ws.modified_on,
        "unconfined": bool(company is not None and company.host_trusted),
    }


def workspace_row(app: RealizerReadModels, ws: ExecutionWorkspace) -> ev.ExecutionWorkspaceRow:
    """A list row: no git was run for it."""
    return ev.ExecutionWorkspaceRow(**_row_fields(app, ws))


def workspace_view(
    app: RealizerReadModels, ws: ExecutionWorkspace, delivery: Delivery | None = None
) -> ev.ExecutionWorkspace:
    """The detail: the row plus delivery state (when inspected) and runtime provisioning."""
    runtime: Literal["deferred", "none"] = (
        "deferred" if ws.config.get("runtimeProvisionCommand") else "none"
    )
    return ev.ExecutionWorkspace(
        **_row_fields(app, ws),
        delivery_state=delivery.state if delivery else "unknown",  # type: ignore[arg-type]
        commits_ahead=delivery.commits_ahead if delivery else None,
        runtime_provisioning=ev.RuntimeProvisioning(state=runtime),
    )


def summary_view(ws: ExecutionWorkspace) -> ev.ExecutionWorkspaceSummary:
    """A row of ``?summary=true``."""
    return ev.ExecutionWorkspaceSummary(
        id=str(ws.id),
        name=ws.name,
        mode=ws.mode,  # type: ignore[arg-type]
        status=ws.status,  # type: ignore[arg-type]
        cwd=ws.cwd,
        branch_name=ws.branch_name,
        project_workspace_id=ws.project_workspace_id,
        last_used_at=ws.last_used_at,
    )


def operation_row(operation: WorkspaceOperation) -> ev.WorkspaceOperation:
    """A list row: no excerpts."""
    return workspace_audit.operation_row(operation, "realizer")


def operation_detail(operation: WorkspaceOperation) -> ev.WorkspaceOperationDetail:
    """The row plus the last 64 KiB of each stream."""
    return workspace_audit.operation_detail(operation, "realizer")


def readiness_view(
    facts: CloseFacts, readiness: Readiness, delivery: Delivery
) -> ev.CloseReadiness:
    """``GET .../close-readiness``."""
    inspection = delivery.inspection
    git = (
        ev.GitFacts(
            branch=inspection.branch,
            head_sha=inspection.head_sha,
            dirty_count=inspection.dirty_count,
            untracked_count=inspection.untracked_count,
            ahead=inspection.ahead,
            behind=inspection.behind,
        )
        if inspection is not None
        else None
    )
    return ev.CloseReadiness(
        workspace_id=facts.workspace.id,
        state=readiness.state,
        blocking_reasons=list(readiness.blocking_reasons),
        warnings=list(readiness.warnings),
        planned_actions=[ev.CloseAction(**action) for action in readiness.planned_actions],
        delivery_state=delivery.state,  # type: ignore[arg-type]
        commits_ahead=delivery.commits_ahead,
        git=git,
        linked_issues=[
            ev.LinkedIssue(
                id=i.id,
                identifier=i.identifier,
                title=i.title,
                status=i.status,
                is_terminal=i.is_terminal,
            )
            for i in facts.linked
        ],
        is_shared_workspace=readiness.is_shared,
        is_destructive_close_allowed=not readiness.blocking_reasons,
    )
