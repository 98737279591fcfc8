"""Wire-shaped answers of the workspace-realizer, for the workspace handler tests."""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.base import Ok

NOW = "2026-11-29T12:00:00Z"
PROJECT = "1c6a1d2f-5b54-4d9f-8d2f-2d3e4f5a6b7c"
PWS = "2d7b2e30-6c65-4e0a-9e30-3e4f5a6b7c8d"
ISSUE = "3e8c3f41-7d76-4f1b-8f41-4f5a6b7c8d9e"
WS = "6e2b4d0f-9a8c-4f3e-8b2c-4d5e6f7a8b9c"
OP = "7f3c5e1a-0b9d-4a4f-9c3d-5e6f7a8b9c0d"


def project(company_id: str, **changes: Any) -> dict[str, Any]:
    return {
        "id": PROJECT,
        "companyId": company_id,
        "name": "Web",
        "executionWorkspacePolicy": {"defaultMode": "isolated_workspace"},
        "createdAt": NOW,
        "updatedAt": NOW,
        **changes,
    }


def project_workspace(company_id: str, **changes: Any) -> dict[str, Any]:
    return {
        "id": PWS,
        "companyId": company_id,
        "projectId": PROJECT,
        "name": "main",
        "cwd": "/srv/web",
        "repoUrl": None,
        "repoRef": None,
        "isPrimary": True,
        "setupCommand": None,
        "cleanupCommand": None,
        "runtimeConfig": None,
        "managedCheckout": {"state": "none"},
        "createdAt": NOW,
        "updatedAt": NOW,
        **changes,
    }


def issue(company_id: str, **changes: Any) -> dict[str, Any]:
    return {
        "id": ISSUE,
        "companyId": company_id,
        "projectId": PROJECT,
        "identifier": "ACME-1",
        "title": "Fix login",
        "status": "todo",
        "createdAt": NOW,
        "updatedAt": NOW,
        **changes,
    }


def workspace(company_id: str, **changes: Any) -> dict[str, Any]:
    return {
        "id": WS,
        "companyId": company_id,
        "projectId": PROJECT,
        "projectWorkspaceId": PWS,
        "sourceIssueId": ISSUE,
        "mode": "isolated_workspace",
        "strategyType": "git_worktree",
        "providerType": "git_worktree",
        "providerRef": "/home/u/.clipyard/worktrees/x/acme-1",
        "name": "acme-1",
        "status": "active",
        "cwd": "/home/u/.clipyard/worktrees/x/acme-1",
        "repoUrl": None,
        "baseRef": "main",
        "branchName": "acme-1",
        "nodeId": "local",
        "openedAt": NOW,
        "lastUsedAt": NOW,
        "createdAt": NOW,
        "updatedAt": NOW,
        **changes,
    }


def operation(company_id: str, **changes: Any) -> dict[str, Any]:
    return {
        "id": OP,
        "companyId": company_id,
        "executionWorkspaceId": WS,
        "phase": "worktree_prepare",
        "command": "git worktree add",
        "cwd": "/srv/web",
        "status": "succeeded",
        "exitCode": 0,
        "startedAt": NOW,
        "finishedAt": NOW,
        "source": "realizer",
        **changes,
    }


def ok(result: Any) -> Ok:
    """An ``ok`` reply as the bus delivers it (the result decoded to plain JSON values)."""
    return Ok(result=msgspec.json.decode(msgspec.json.encode(result)))


def page(*rows: Any, total: int | None = None) -> Ok:
    return ok({"items": list(rows), "total": len(rows) if total is None else total})
