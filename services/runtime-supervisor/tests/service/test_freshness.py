"""Read-your-writes across services: a ``ControlRuntime`` or ``EnsureRunServices`` that carries
what its caller has just read from the realizer (``realizerFacts``) is acted on only once the
supervisor's copies say the same. A configuration saved a moment ago is the one started; a
workspace realized a moment ago is found; copies that never catch up answer 503, in time."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import msgspec
import pytest
from bus_world import BOARD, Sup, Upstream, eventually, http_service, runtime

from contracts.base import ErrorReply, Ok
from contracts.runtime_commands import ControlRuntime, EnsureRunServices, RealizerFacts
from contracts.runtime_subjects import ensure_run_services, runtime_control
from contracts.workspace_config import ExecutionWorkspaceConfig, RuntimeConfig
from contracts.workspace_events import ProjectWorkspaceRuntimeConfigChanged

pytestmark = pytest.mark.integration

OLD = runtime(http_service("old", command="exec sleep 300", port=None, readiness=None))
NEW = runtime(http_service("new", command="exec sleep 301", port=None, readiness=None))
LAG = 1.0
"""Seconds the test holds the realizer's event back, as a slow JetStream delivery would."""


def _own(config: RuntimeConfig) -> ExecutionWorkspaceConfig:
    return ExecutionWorkspaceConfig(workspace_runtime=config)


async def _started_names(reply: Any) -> list[str]:
    assert isinstance(reply, Ok), reply
    return sorted(row["serviceName"] for row in reply.result["runtimeServices"])


async def test_a_start_right_after_a_config_change_uses_the_new_configuration(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    ws = await upstream.workspace(str(workdir), config=_own(OLD))
    await sup.known(ws)
    facts = RealizerFacts(workspace_config=_own(NEW), lifecycle_generation=0)
    command = ControlRuntime(principal=BOARD, workspace_id=ws, action="start",
                             realizer_facts=facts)  # fmt: skip

    asking = asyncio.ensure_future(sup.request(runtime_control(sup.node), command, timeout=30))
    await asyncio.sleep(LAG)
    assert not asking.done(), asking.result()  # waiting for the copies, not starting "old"
    await upstream.ws_config(ws, _own(NEW))

    assert await _started_names(await asyncio.wait_for(asking, 30)) == ["new"]
    assert [s.service_name for s in (await sup.state(ws)).runtime_services] == ["new"]


async def test_an_inherited_project_configuration_changed_a_moment_ago_is_the_one_started(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    pw = await upstream.project_workspace(str(workdir), OLD)
    ws = await upstream.workspace(str(workdir), pw=pw)
    await sup.known(ws)
    facts = RealizerFacts(workspace_config=None, project_runtime_config=NEW)
    command = ControlRuntime(principal=BOARD, workspace_id=ws, action="start",
                             realizer_facts=facts)  # fmt: skip

    asking = asyncio.ensure_future(sup.request(runtime_control(sup.node), command, timeout=30))
    await asyncio.sleep(LAG)
    assert not asking.done(), asking.result()
    await upstream.publish(ProjectWorkspaceRuntimeConfigChanged(
        **upstream.envelope("project_workspace", pw), project_id="p-1", runtime_config=NEW))  # fmt: skip

    assert await _started_names(await asyncio.wait_for(asking, 30)) == ["new"]


async def test_a_workspace_realized_a_moment_ago_is_found_by_a_start_and_a_run(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    pw = await upstream.project_workspace(str(workdir), OLD)
    await sup.known(pw=pw)
    ws, run = str(uuid.uuid4()), str(uuid.uuid4())
    start = ControlRuntime(principal=BOARD, workspace_id=ws, action="start",
                           realizer_facts=RealizerFacts(workspace_config=None))  # fmt: skip
    ensure = EnsureRunServices(principal=BOARD, workspace_id=ws, run_id=run, agent_id="agent-1",
                               realizer_facts=RealizerFacts(workspace_config=None))  # fmt: skip
    starting = asyncio.ensure_future(sup.request(runtime_control(sup.node), start, timeout=30))
    ensuring = asyncio.ensure_future(sup.request(ensure_run_services(sup.node), ensure, timeout=30))
    await asyncio.sleep(LAG)
    assert not starting.done(), starting.result()
    assert not ensuring.done(), ensuring.result()
    await upstream.workspace(str(workdir), pw=pw, ws=ws)

    assert await _started_names(await asyncio.wait_for(starting, 30)) == ["old"]
    ensured = await asyncio.wait_for(ensuring, 30)
    assert await _started_names(ensured) == ["old"]
    (row,) = ensured.result["runtimeServices"]
    assert row["leaseRunIds"] == [run]


async def test_copies_that_never_catch_up_answer_503_within_the_callers_time(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    ws = await upstream.workspace(str(workdir), config=_own(OLD))
    await sup.known(ws)
    command = ControlRuntime(principal=BOARD, workspace_id=ws, action="start",
                             realizer_facts=RealizerFacts(workspace_config=_own(NEW)))  # fmt: skip
    started = time.monotonic()

    reply = await sup.request(runtime_control(sup.node), command, timeout=4.0)

    assert isinstance(reply, ErrorReply), reply
    assert (reply.code, reply.status) == ("service_unavailable", 503), reply
    assert "retry" in reply.message
    assert reply.details["behind"] == ["workspaceConfig"]
    assert time.monotonic() - started < 4.0
    assert (await sup.state(ws)).runtime_services == []  # nothing started from the old one
    # Without facts (a caller that read nothing) the copies are used as they are, at once.
    plain = ControlRuntime(principal=BOARD, workspace_id=ws, action="start")
    assert await _started_names(await sup.request(runtime_control(sup.node), plain)) == ["old"]


async def test_a_workspace_the_caller_read_but_the_copies_never_heard_of_is_503_not_404(
    start_supervisor: Any, sup: Sup
) -> None:
    # The realizer answered the caller (the gateway sends its facts), its event has not come:
    # the workspace exists, the copies are behind (NATS was down, say). "Not found" would be false.
    await start_supervisor()
    ws = str(uuid.uuid4())
    command = ControlRuntime(principal=BOARD, workspace_id=ws, action="start",
                             realizer_facts=RealizerFacts(workspace_config=None))  # fmt: skip
    reply = await sup.request(runtime_control(sup.node), command, timeout=3.0)
    assert isinstance(reply, ErrorReply), reply
    assert (reply.code, reply.status) == ("service_unavailable", 503), reply
    assert "has not yet heard of execution workspace" in reply.message
    assert "retry" in reply.message
    # Without facts nobody said it exists: 404.
    plain = ControlRuntime(principal=BOARD, workspace_id=ws, action="start")
    answer = await sup.request(runtime_control(sup.node), plain, timeout=3.0)
    assert isinstance(answer, ErrorReply), answer
    assert answer.status == 404, answer


async def test_copies_that_moved_on_past_what_the_caller_read_act_at_once_on_the_newer(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    # The caller read OLD; the board changed it to NEW before the action reached us (a run that
    # waited for its workspace lease, say). The copies have had OLD: they are not behind.
    await start_supervisor()
    ws = await upstream.workspace(str(workdir), config=_own(OLD))
    await upstream.ws_config(ws, _own(NEW))
    await _until_config(sup, ws, "new")
    command = ControlRuntime(principal=BOARD, workspace_id=ws, action="start",
                             realizer_facts=RealizerFacts(workspace_config=_own(OLD)))  # fmt: skip
    started = time.monotonic()

    reply = await sup.request(runtime_control(sup.node), command, timeout=30)

    assert await _started_names(reply) == ["new"]
    assert time.monotonic() - started < 5.0  # not the 10 s wait


async def test_a_stop_waits_only_for_the_workspace_not_for_its_configuration(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    ws = await upstream.workspace(str(workdir), config=_own(OLD))
    await sup.known(ws)
    await sup.ok_control("start", ws)
    stale = RealizerFacts(workspace_config=_own(NEW))  # never copied here
    command = ControlRuntime(principal=BOARD, workspace_id=ws, action="stop", realizer_facts=stale)
    started = time.monotonic()

    reply = await sup.request(runtime_control(sup.node), command, timeout=30)

    assert isinstance(reply, Ok), reply
    assert [row["status"] for row in reply.result["runtimeServices"]] == ["stopped"]
    assert time.monotonic() - started < 5.0
    # A stop naming a configured command resolves it in the configuration: that one waits.
    named = msgspec.structs.replace(command, workspace_command_id="service:new")
    refused = await sup.request(runtime_control(sup.node), named, timeout=4.0)
    assert isinstance(refused, ErrorReply), refused
    assert (refused.code, refused.status) == ("service_unavailable", 503), refused


async def _until_config(sup: Sup, ws: str, service: str) -> None:
    """Wait until a plain start (no facts) would use the configuration naming ``service``: the
    copies have had the change."""
    plain = ControlRuntime(principal=BOARD, workspace_id=ws, action="stop",
                           workspace_command_id=f"service:{service}")  # fmt: skip

    async def probe() -> bool | None:
        reply = await sup.request(runtime_control(sup.node), plain)
        return True if isinstance(reply, Ok) else None

    await eventually(probe, what=f"the supervisor knowing service {service} of {ws}")
