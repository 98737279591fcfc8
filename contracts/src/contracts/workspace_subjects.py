"""Subjects of the workspace commands and queries, built with :mod:`contracts.subjects`.

Host-bound commands (they touch one host's files or processes) take the node token. Workspace
operations and workspace audit trails are stored by whichever service did the work, so their
queries are service-wide (``ws.qry.<service>.<noun>``).
"""

from __future__ import annotations

from typing import Final

from contracts.subjects import ServiceToken, command, query, service_query

__all__ = [
    "ISSUE_ADD_WORK_PRODUCT",
    "ISSUE_CREATE",
    "ISSUE_DELETE",
    "ISSUE_GET",
    "ISSUE_LIST",
    "ISSUE_UPDATE",
    "ISSUE_WORK_PRODUCTS",
    "PROJECT_CREATE",
    "PROJECT_DELETE",
    "PROJECT_GET",
    "PROJECT_LIST",
    "PROJECT_UPDATE",
    "PROJECT_WORKSPACE_DELETE",
    "PROJECT_WORKSPACE_GET",
    "PROJECT_WORKSPACE_LIST",
    "WORKSPACE_CLOSE_READINESS",
    "WORKSPACE_DIFF",
    "WORKSPACE_GET",
    "WORKSPACE_HISTORY",
    "WORKSPACE_LIST",
    "WORKSPACE_LIST_SUMMARIES",
    "archive_workspace",
    "create_project_workspace",
    "realize_workspace",
    "reconcile_branch",
    "reopen_workspace",
    "stop_workspace_runtime_services",
    "update_execution_workspace",
    "update_project_workspace",
    "workspace_events",
    "workspace_operation",
    "workspace_operation_output",
    "workspace_operations",
]

PROJECT_CREATE: Final = command("project", "create")
PROJECT_UPDATE: Final = command("project", "update")
PROJECT_DELETE: Final = command("project", "delete")
PROJECT_GET: Final = query("project", "get")
PROJECT_LIST: Final = query("project", "list")

PROJECT_WORKSPACE_DELETE: Final = command("project_workspace", "delete")
PROJECT_WORKSPACE_GET: Final = query("project_workspace", "get")
PROJECT_WORKSPACE_LIST: Final = query("project_workspace", "list")

ISSUE_CREATE: Final = command("issue", "create")
ISSUE_UPDATE: Final = command("issue", "update")
ISSUE_DELETE: Final = command("issue", "delete")
ISSUE_ADD_WORK_PRODUCT: Final = command("issue", "add_work_product")
ISSUE_GET: Final = query("issue", "get")
ISSUE_LIST: Final = query("issue", "list")
ISSUE_WORK_PRODUCTS: Final = query("issue", "work_products")

WORKSPACE_GET: Final = query("workspace", "get")
WORKSPACE_LIST: Final = query("workspace", "list")
WORKSPACE_LIST_SUMMARIES: Final = query("workspace", "list_summaries")
WORKSPACE_CLOSE_READINESS: Final = query("workspace", "close_readiness")
WORKSPACE_DIFF: Final = query("workspace", "diff")
WORKSPACE_HISTORY: Final = query("workspace", "history")


def create_project_workspace(node: str) -> str:
    """``ws.cmd.project_workspace.create.<node>`` (a repo-only workspace is cloned there)."""
    return command("project_workspace", "create", node)


def update_project_workspace(node: str) -> str:
    """``ws.cmd.project_workspace.update.<node>`` (a new ``repoUrl`` is cloned there)."""
    return command("project_workspace", "update", node)


def realize_workspace(node: str) -> str:
    """``ws.cmd.workspace.realize.<node>``."""
    return command("workspace", "realize", node)


def update_execution_workspace(node: str) -> str:
    """``ws.cmd.workspace.update.<node>`` (may archive or reopen)."""
    return command("workspace", "update", node)


def archive_workspace(node: str) -> str:
    """``ws.cmd.workspace.archive.<node>``."""
    return command("workspace", "archive", node)


def reopen_workspace(node: str) -> str:
    """``ws.cmd.workspace.reopen.<node>``."""
    return command("workspace", "reopen", node)


def reconcile_branch(node: str) -> str:
    """``ws.cmd.workspace.reconcile_branch.<node>``."""
    return command("workspace", "reconcile_branch", node)


def stop_workspace_runtime_services(node: str) -> str:
    """``ws.cmd.runtime_service.stop_workspace.<node>``: served by the runtime-supervisor."""
    return command("runtime_service", "stop_workspace", node)


def workspace_operations(service: ServiceToken) -> str:
    """``ws.qry.<service>.workspace_operations``: the operations that service recorded."""
    return service_query(service, "workspace_operations")


def workspace_operation(service: ServiceToken) -> str:
    """``ws.qry.<service>.workspace_operation``: one operation with its excerpts."""
    return service_query(service, "workspace_operation")


def workspace_operation_output(service: ServiceToken) -> str:
    """``ws.qry.<service>.workspace_operation_output``: a byte range of its output."""
    return service_query(service, "workspace_operation_output")


def workspace_events(service: ServiceToken) -> str:
    """``ws.qry.<service>.workspace_events``: a workspace's audit trail as that service stores it."""
    return service_query(service, "workspace_events")
