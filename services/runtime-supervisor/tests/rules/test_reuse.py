"""Reuse keys and scopes (reference §6.4, case 53)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from runtime_supervisor.domain.reuse import reuse_key, scope_of


def _identity(**changes: Any) -> dict[str, Any]:
    identity: dict[str, Any] = {
        "lifecycle": "shared",
        "scope_type": "project_workspace",
        "scope_id": "pw-1",
        "service_name": "web",
        "command": "npm run dev",
        "cwd": "/w/pw1",
        "port": 3000,
        "env": {"A": "1", "B": "2"},
        "expose": None,
    }
    identity.update(changes)
    return identity


def test_case_53_equal_identities_share_a_key_ephemeral_has_none() -> None:
    first = reuse_key(**_identity())
    second = reuse_key(**_identity(env={"B": "2", "A": "1"}))
    assert first is not None
    assert first == second
    assert len(first) == 64
    assert reuse_key(**_identity(lifecycle="ephemeral")) is None


@pytest.mark.parametrize(
    "change",
    [
        {"scope_type": "execution_workspace"},
        {"scope_id": "pw-2"},
        {"service_name": "api"},
        {"command": "npm run start"},
        {"cwd": "/w/pw1/apps"},
        {"port": None},
        {"env": {"A": "1"}},
        {"expose": {"urlTemplate": "http://x"}},
    ],
)
def test_any_difference_changes_the_key(change: dict[str, Any]) -> None:
    assert reuse_key(**_identity(**change)) != reuse_key(**_identity())


def test_the_key_is_the_sha256_of_the_stable_json_of_the_reference() -> None:
    expected_json = (
        '{"command":"npm run dev","cwd":"/w/pw1","env":{"A":"1","B":"2"},"expose":null,'
        '"port":3000,"scopeId":"pw-1","scopeType":"project_workspace","serviceName":"web"}'
    )
    assert reuse_key(**_identity()) == hashlib.sha256(expected_json.encode()).hexdigest()


IDS: dict[str, Any] = {
    "project_workspace_id": "pw-1",
    "workspace_id": "ew-1",
    "agent_id": "ag-1",
    "run_id": "run-1",
    "cwd": "/w/ew1",
}


@pytest.mark.parametrize(
    ("scope", "lifecycle", "expected"),
    [
        (None, "shared", ("project_workspace", "pw-1")),
        (None, "ephemeral", ("run", "run-1")),
        ("project_workspace", "ephemeral", ("project_workspace", "pw-1")),
        ("execution_workspace", "shared", ("execution_workspace", "ew-1")),
        ("agent", "shared", ("agent", "ag-1")),
        ("run", "shared", ("run", "run-1")),
    ],
)
def test_scopes(scope: Any, lifecycle: str, expected: tuple[str, str]) -> None:
    assert scope_of(scope, lifecycle, **IDS) == expected


def test_scope_fallbacks() -> None:
    bare = {**IDS, "project_workspace_id": None, "workspace_id": None, "run_id": None}
    assert scope_of("project_workspace", "shared", **bare, project_id="p-1") == (
        "project_workspace",
        "p-1",
    )
    assert scope_of("execution_workspace", "shared", **bare) == ("execution_workspace", "/w/ew1")
    assert scope_of(None, "ephemeral", **bare) == ("run", None)
