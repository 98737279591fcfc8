"""Selecting the targets of a runtime control request (reference §4.2 steps 1, 5-8; case 64)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from contracts.execution_views import RuntimeServiceBrief
from contracts.workspace_config import JobSpec, RuntimeConfig, ServiceSpec
from runtime_supervisor.domain.config.effective import EffectiveConfig, effective_commands
from runtime_supervisor.domain.control_rules import ControlError, RowLike, Selection, select_targets

CONFIG = RuntimeConfig(
    services=[
        ServiceSpec(name="web", command="npm run dev", cwd="apps/web"),
        ServiceSpec(name="api", command="npm run api"),
    ],
    jobs=[JobSpec(name="seed", command="make seed")],
)
EFFECTIVE = effective_commands(CONFIG, None)


def _row(row_id: str, name: str, index: int | None, status: str = "running", **more: Any) -> Any:
    return RuntimeServiceBrief(
        id=row_id, service_name=name, service_index=index, status=status, **more
    )


def _select(
    action: str,
    effective: EffectiveConfig = EFFECTIVE,
    *,
    command: str | None = None,
    index: int | None = None,
    row: str | None = None,
    rows: list[RowLike] | None = None,
) -> Selection:
    return select_targets(
        effective,
        action,
        workspace_command_id=command,
        service_index=index,
        runtime_service_id=row,
        service_rows=rows or [],
    )


def _refusal(action: str, **kwargs: Any) -> ControlError:
    with pytest.raises(ControlError) as raised:
        _select(action, **kwargs)
    return raised.value


def test_case_64_run_a_service_start_a_job_and_an_unknown_action() -> None:
    run_service = _refusal("run", command="service:web")
    assert (run_service.code, run_service.status) == ("unprocessable", 422)
    assert run_service.message == 'Workspace service "web" should be started or restarted, not run'
    start_job = _refusal("start", command="job:seed")
    assert (start_job.code, start_job.status) == ("unprocessable", 422)
    assert start_job.message == 'Workspace job "seed" can only be run'
    assert start_job.details["workspaceCommandKind"] == "job"
    unknown = _refusal("explode", command="job:seed")
    assert (unknown.code, unknown.status) == ("not_found", 404)
    assert unknown.message == (
        "Workspace command action not found: explode; use start, stop, restart or run"
    )


@pytest.mark.parametrize("action", ["stop", "restart"])
def test_a_job_cannot_be_stopped_or_restarted(action: str) -> None:
    assert _refusal(action, command="job:seed").status == 422


def test_unknown_command_and_row_are_not_found() -> None:
    missing = _refusal("start", command="service:nope")
    assert (missing.status, missing.details) == (404, {"workspaceCommandId": "service:nope"})
    assert missing.message == "Workspace command not found for this execution workspace"
    row = _refusal("stop", row="rs-9", rows=[_row("rs-1", "web", 0)])
    assert (row.status, row.details) == (404, {"runtimeServiceId": "rs-9"})


def test_a_command_named_by_its_name_as_the_reference_clients_do() -> None:
    restart = _select("restart", command="web")
    assert restart.command is not None
    assert restart.command.id == "service:web"
    assert _select("run", command="seed").job is EFFECTIVE.jobs[0]
    shared = effective_commands(
        RuntimeConfig(
            services=[ServiceSpec(name="web", command="w")], jobs=[JobSpec(name="web", command="j")]
        ),
        None,
    )
    ambiguous = _refusal("start", effective=shared, command="web")
    assert ambiguous.status == 404
    assert ambiguous.details["workspaceCommandIds"] == ["service:web", "job:web"]
    assert "'web' names 2 commands; use one of their ids" in ambiguous.message


def test_a_service_index_out_of_range() -> None:
    refused = _refusal("start", index=2)
    assert (refused.status, refused.message) == (
        422,
        "Selected runtime service is not defined in this execution workspace runtime config",
    )


def test_run_needs_a_job() -> None:
    assert _refusal("run").message == "Select a workspace job to run"
    assert _refusal("run", index=0).message == (
        'Workspace service "web" should be started or restarted, not run'
    )
    selection = _select("RUN", command="job:seed")
    assert (selection.action, selection.kind) == ("run", "job")
    assert selection.job is EFFECTIVE.jobs[0]
    assert selection.commands == (EFFECTIVE.jobs[0],)


@pytest.mark.parametrize("action", ["start", "restart"])
def test_starting_needs_a_runtime_config(action: str) -> None:
    refused = _refusal(action, effective=effective_commands(None, None))
    assert refused.status == 422
    assert "no runtime config" in refused.message


def test_stop_without_config_selects_nothing_but_is_allowed() -> None:
    selection = _select("stop", effective=effective_commands(None, None))
    assert (selection.kind, selection.commands, selection.service_index) == ("service", (), None)


def test_all_services_when_none_is_named() -> None:
    selection = _select("Start")
    assert selection.action == "start"
    assert selection.commands == EFFECTIVE.services
    assert (selection.command, selection.job, selection.runtime_service_id) == (None, None, None)


def test_a_service_by_index_and_by_command() -> None:
    by_index = _select("restart", index=1)
    assert by_index.commands == (EFFECTIVE.services[1],)
    assert by_index.service_index == 1
    by_command = _select("stop", command="service:api", index=0)
    assert (by_command.command, by_command.service_index) == (EFFECTIVE.services[1], 1)


def test_a_named_service_gets_its_best_matching_row() -> None:
    rows: list[RowLike] = [
        _row("old", "web", 0, status="stopped"),
        _row("other", "api", 1),
        _row("live", "web", 0),
    ]
    assert _select("stop", command="service:web", rows=rows).runtime_service_id == "live"
    loose: list[RowLike] = [
        _row("name-only", "api", None, command="other"),
        _row("name-command", "api", 7, command="npm run api"),
        _row("cwd-only", "x", None, cwd="/w/ws1/apps/web"),
    ]
    assert _select("stop", command="service:api", rows=loose).runtime_service_id == "name-command"
    assert _select("stop", command="service:web", rows=loose).runtime_service_id == "cwd-only"
    unrelated: list[RowLike] = [_row("zzz", "db", 5, command="postgres")]
    assert _select("stop", command="service:web", rows=unrelated).runtime_service_id is None


def test_a_named_row_selects_its_service() -> None:
    rows: list[RowLike] = [_row("rs-1", "api", 1), _row("rs-stray", "gone", None)]
    selection = _select("restart", row="rs-1", rows=rows)
    assert (selection.command, selection.runtime_service_id) == (EFFECTIVE.services[1], "rs-1")
    stray = _select("stop", row="rs-stray", rows=rows)
    assert (stray.commands, stray.runtime_service_id) == ((), "rs-stray")
    assert _refusal("start", row="rs-stray", rows=rows).status == 422


def test_a_row_of_a_removed_index_can_be_stopped_not_started() -> None:
    rows: list[RowLike] = [_row("rs-5", "old", 5)]
    assert _select("stop", row="rs-5", rows=rows).runtime_service_id == "rs-5"
    assert _refusal("start", row="rs-5", rows=rows).details == {"serviceIndex": 5}


def test_disabled_commands() -> None:
    web, api = EFFECTIVE.services
    disabled = replace(api, disabled_reason="needs a database")
    effective = replace(EFFECTIVE, commands=(web, disabled, *EFFECTIVE.jobs))
    refused = _refusal("start", effective=effective, command="service:api")
    assert refused.status == 422
    assert refused.message == 'Workspace command "api" is disabled: needs a database'
    start_all = _select("start", effective=effective)
    assert (start_all.commands, start_all.skipped) == ((web,), (disabled,))
    stop_all = _select("stop", effective=effective)
    assert (stop_all.commands, stop_all.skipped) == ((web, disabled), ())
    assert _select("stop", effective=effective, index=1).commands == (disabled,)
