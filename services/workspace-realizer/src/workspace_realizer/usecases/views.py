"""Read-model aggregates of the company-wide part (projects, project workspaces, issues) -> the
contract views the realizer answers with (built on the store's thread, where the read models are
consistent); the host part's are :mod:`workspace_realizer.usecases.host.views`."""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from contracts import workspace_views as wv
from contracts.workspace_config import (
    ExecutionWorkspacePolicy,
    ExecutionWorkspaceSettings,
    JobSpec,
    ManagedCheckout,
    RuntimeCommandSpec,
    RuntimeConfig,
    ServiceSpec,
)

if TYPE_CHECKING:
    from workspace_realizer.domain import Issue, Project, ProjectWorkspace
    from workspace_realizer.domain.documents import WorkProductRecord

__all__ = [
    "issue_view",
    "managed_checkout",
    "project_view",
    "project_workspace_view",
    "work_product_view",
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
        node_id=workspace.node_id,
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


def work_product_view(company_id: str, issue_id: str, product: WorkProductRecord) -> wv.WorkProduct:
    """A stored work product as the API shows it."""
    created = datetime.fromisoformat(product["createdAt"])
    return wv.WorkProduct(
        id=product["id"],
        company_id=company_id,
        issue_id=issue_id,
        type=product["type"],  # type: ignore[arg-type]
        url=product.get("url"),
        external_id=product.get("externalId"),
        title=product.get("title"),
        metadata=dict(product.get("metadata") or {}),
        execution_workspace_id=product.get("executionWorkspaceId"),
        created_at=created,
        updated_at=created,
    )
