"""Workspace contracts: strict HTTP inputs, partial updates, views and subjects."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from contracts import workspace_subjects as ws
from contracts.base import Actor, Principal
from contracts.errors import DEFAULT_STATUS, ErrorCode
from contracts.execution_commands import UpdateExecutionWorkspace
from contracts.execution_views import ExecutionWorkspace, ExecutionWorkspaceRow, RealizeResult
from contracts.workspace_commands import CreateProject
from contracts.workspace_config import ExecutionWorkspacePolicy, HttpReadiness, RuntimeConfig
from contracts.workspace_http import (
    CreateProjectBody,
    CreateProjectWorkspaceBody,
    UpdateExecutionWorkspaceBody,
    UpdateIssueBody,
)
from contracts.workspace_views import Page

WHEN = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
BOARD = Principal(company_id="c1", actor=Actor(type="board", id="k1"))


@pytest.mark.parametrize(
    ("body_type", "raw", "where"),
    [
        (CreateProjectBody, {"name": "x", "executionWorkspacePolicy": {"defaultmode": "x"}}, "$."),
        (
            CreateProjectBody,
            {"name": "x", "executionWorkspacePolicy": {"workspaceStrategy": {"typ": "git"}}},
            "workspaceStrategy",
        ),
        (
            CreateProjectWorkspaceBody,
            {
                "name": "x",
                "cwd": "/r",
                "runtimeConfig": {
                    "services": [
                        {"name": "w", "command": "c", "readiness": {"type": "tcp", "x": 1}}
                    ]
                },
            },
            "readiness",
        ),
        (UpdateExecutionWorkspaceBody, {"config": {"teardown": "x"}}, "config"),
    ],
)
def test_http_bodies_refuse_unknown_fields_at_any_depth(
    body_type: type, raw: dict[str, object], where: str
) -> None:
    # A typo in a nested object is an error, not a silent default.
    with pytest.raises(msgspec.ValidationError, match="unknown field") as info:
        msgspec.json.decode(msgspec.json.encode(raw), type=body_type)
    assert where in str(info.value)


def test_bus_values_tolerate_unknown_fields() -> None:
    # The same values on the bus evolve additively: an older consumer ignores a newer field.
    raw = {"defaultMode": "isolated_workspace", "addedLater": 1, "workspaceStrategy": {"new": 2}}
    policy = msgspec.json.decode(msgspec.json.encode(raw), type=ExecutionWorkspacePolicy)
    assert policy.default_mode == "isolated_workspace"


def test_a_strict_body_goes_on_the_bus_as_is() -> None:
    # The strict twins subclass the bus values, so the gateway passes them straight through.
    body = msgspec.json.decode(
        b'{"name": "Web", "executionWorkspacePolicy": {"defaultMode": "isolated_workspace",'
        b' "workspaceStrategy": {"type": "git_worktree"}}}',
        type=CreateProjectBody,
    )
    command = CreateProject(
        principal=BOARD,
        company_id="c1",
        name=body.name,
        execution_workspace_policy=body.execution_workspace_policy,
    )
    decoded = msgspec.json.decode(msgspec.json.encode(command), type=CreateProject)
    assert decoded.execution_workspace_policy is not None
    assert decoded.execution_workspace_policy.workspace_strategy.type == "git_worktree"
    assert type(decoded.execution_workspace_policy) is ExecutionWorkspacePolicy


def test_readiness_is_tagged_by_type() -> None:
    raw = b'{"services": [{"name": "w", "command": "c", "readiness": {"type": "http", "urlTemplate": "u"}}]}'
    config = msgspec.json.decode(raw, type=RuntimeConfig)
    assert config.services[0].readiness == HttpReadiness(url_template="u")


def test_patch_leaves_absent_fields_unset_and_keeps_null() -> None:
    # Absent stays as it is; null clears; neither is confused with the other on the wire.
    body = msgspec.json.decode(b'{"assigneeAgentId": null}', type=UpdateIssueBody)
    assert body.assignee_agent_id is None
    assert body.title is msgspec.UNSET
    command = UpdateExecutionWorkspace(principal=BOARD, workspace_id="w", status="archived")
    wire = msgspec.json.decode(msgspec.json.encode(command))
    assert "name" not in wire
    assert "config" not in wire
    assert wire["status"] == "archived"


def _row(**changes: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": "w1",
        "companyId": "c1",
        "projectId": "p1",
        "projectWorkspaceId": "pw1",
        "sourceIssueId": "i1",
        "mode": "isolated_workspace",
        "strategyType": "git_worktree",
        "providerType": "git_worktree",
        "providerRef": "/wt",
        "name": "b",
        "status": "active",
        "cwd": "/wt",
        "repoUrl": None,
        "baseRef": "main",
        "branchName": "b",
        "nodeId": "local",
        "openedAt": "2026-11-29T12:00:00Z",
        "lastUsedAt": "2026-11-29T12:00:00Z",
        "createdAt": "2026-11-29T12:00:00Z",
        "updatedAt": "2026-11-29T12:00:00Z",
    }
    row.update(changes)
    return row


def test_views_decode_with_defaults() -> None:
    page = msgspec.json.decode(
        msgspec.json.encode({"items": [_row()], "total": 7}), type=Page[ExecutionWorkspaceRow]
    )
    assert page.total == 7
    assert page.items[0].lifecycle_generation == 0
    detail = msgspec.json.decode(msgspec.json.encode(_row()), type=ExecutionWorkspace)
    assert detail.delivery_state == "unknown"
    assert detail.runtime_provisioning.state == "none"
    result = RealizeResult(workspace=detail, created=True)
    assert msgspec.json.decode(msgspec.json.encode(result), type=RealizeResult) == result
    with pytest.raises(msgspec.ValidationError, match="deliveryState"):
        msgspec.json.decode(
            msgspec.json.encode(_row(deliveryState="merged_somehow")), type=ExecutionWorkspace
        )


def test_workspace_subjects() -> None:
    assert ws.realize_workspace("local") == "ws.cmd.workspace.realize.local"
    assert ws.update_execution_workspace("n2") == "ws.cmd.workspace.update.n2"
    assert ws.stop_workspace_runtime_services("local") == (
        "ws.cmd.runtime_service.stop_workspace.local"
    )
    assert ws.create_project_workspace("local") == "ws.cmd.project_workspace.create.local"
    assert ws.workspace_operations("supervisor") == "ws.qry.supervisor.workspace_operations"
    assert ws.workspace_events("realizer") == "ws.qry.realizer.workspace_events"
    assert ws.PROJECT_LIST == "ws.qry.project.list"
    assert ws.ISSUE_ADD_WORK_PRODUCT == "ws.cmd.issue.add_work_product"
    with pytest.raises(ValueError, match="invalid subject token"):
        ws.realize_workspace("Node.1")


def test_every_error_code_has_a_status() -> None:
    assert set(DEFAULT_STATUS) == set(ErrorCode)
    assert DEFAULT_STATUS[ErrorCode.NOT_REOPENABLE] == 409
    assert DEFAULT_STATUS[ErrorCode.WORKSPACE_PATH_REQUIRED] == 422
