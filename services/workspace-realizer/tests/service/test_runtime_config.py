"""Runtime config validation and command ids (reference §6.1)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.workspace_config import JobSpec, PortSpec, RuntimeConfig, ServiceSpec
from workspace_realizer.domain.errors import InvalidInputError
from workspace_realizer.domain.runtime_config import normalize_runtime_config


def test_commands_get_ids_and_service_indexes() -> None:
    config = RuntimeConfig(
        services=[
            ServiceSpec(name="Web", command="npm run dev", port=PortSpec(type="auto")),
            ServiceSpec(name="web", command="npm run api", port=3000),
            ServiceSpec(name="db", command="postgres", id="Database"),
        ],
        jobs=[JobSpec(name="hello", command="echo hi", timeout_sec=5)],
    )
    commands = normalize_runtime_config(msgspec.to_builtins(config))
    assert [c["id"] for c in commands] == [
        "service:web",
        "service:web-services-2",
        "database",
        "job:hello",
    ]
    assert [c["serviceIndex"] for c in commands] == [0, 1, 2, None]
    assert commands[0]["port"] == {"type": "auto"}
    assert commands[0]["stopPolicy"] == {"type": "manual"}
    assert commands[3]["timeoutSec"] == 5


def test_the_commands_form_wins_when_not_empty() -> None:
    raw = {"commands": [{"kind": "job", "name": "seed", "command": "make seed"}],
           "services": [{"name": "ignored", "command": "x"}]}  # fmt: skip
    assert [c["id"] for c in normalize_runtime_config(raw)] == ["job:seed"]
    nameless = normalize_runtime_config({"services": [{"command": "x", "lifecycle": "ephemeral"}]})
    assert (nameless[0]["id"], nameless[0]["reuseScope"]) == ("service:service-1", "run")
    assert normalize_runtime_config(None) == []


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"services": [{"name": "web"}]}, "runtimeConfig.services[0].command"),
        ({"services": [{"name": "web", "command": " "}]}, "runtimeConfig.services[0].command"),
        (
            {"services": [{"name": "w", "command": "x", "port": 70000}]},
            "runtimeConfig.services[0].port",
        ),
        (
            {"services": [{"name": "w", "command": "x", "port": {"type": "random"}}]},
            "runtimeConfig.services[0].port",
        ),
        (
            {"services": [{"name": "w", "command": "x", "readiness": {"type": "http"}}]},
            "runtimeConfig.services[0].readiness.urlTemplate",
        ),
        (
            {"services": [{"name": "w", "command": "x", "lifecycle": "forever"}]},
            "runtimeConfig.services[0].lifecycle",
        ),
        (
            {
                "services": [
                    {
                        "name": "w",
                        "command": "x",
                        "stopPolicy": {"type": "idle_timeout", "idleSeconds": 0},
                    }
                ]
            },
            "runtimeConfig.services[0].stopPolicy.idleSeconds",
        ),
        (
            {"jobs": [{"name": "j", "command": "x", "timeoutSec": -1}]},
            "runtimeConfig.jobs[0].timeoutSec",
        ),
        ({"jobs": [{"name": "j", "command": "x", "port": 1}]}, "runtimeConfig.jobs[0].port"),
        ({"commands": [{"kind": "daemon", "command": "x"}]}, "runtimeConfig.commands[0].kind"),
        (
            {"services": [{"name": "w", "command": "x", "env": {"1BAD": "v"}}]},
            "runtimeConfig.services[0].env.1BAD",
        ),
        ({"servises": []}, "runtimeConfig.servises"),
    ],
)
def test_invalid_configs_name_the_field(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        normalize_runtime_config(raw)
    assert refused.value.details["field"] == field
    assert field in str(refused.value)
    assert refused.value.status == 422


def test_a_service_may_start_out_manual_and_nothing_else() -> None:
    # Case 52's configured `manual`: accepted on a service, refused with the values named.
    raw = {"services": [{"name": "db", "command": "postgres", "desiredState": "manual"}]}
    assert normalize_runtime_config(raw)[0]["desiredState"] == "manual"
    with pytest.raises(InvalidInputError, match="must be running, stopped or manual"):
        normalize_runtime_config({"services": [{"command": "x", "desiredState": "paused"}]})
    with pytest.raises(InvalidInputError, match="is not a job field"):
        normalize_runtime_config({"jobs": [{"command": "x", "desiredState": "manual"}]})


def test_an_execution_workspace_override_is_named_as_the_request_carries_it() -> None:
    # PATCH /api/execution-workspaces/{id} sends it as config.workspaceRuntime: errors say so.
    raw = {"services": [{"name": "web"}]}
    with pytest.raises(InvalidInputError) as caught:
        normalize_runtime_config(raw, field="config.workspaceRuntime")
    assert caught.value.details["field"] == "config.workspaceRuntime.services[0].command"
    assert str(caught.value).startswith("config.workspaceRuntime.services[0].command is required")
    with pytest.raises(InvalidInputError) as plain:
        normalize_runtime_config(raw)
    assert plain.value.details["field"] == "runtimeConfig.services[0].command"
