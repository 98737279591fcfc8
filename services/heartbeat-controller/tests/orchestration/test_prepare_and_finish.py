"""Before the launch a run never waits blindly: a cancel stops the realize, the services, the
slot request and the mint at once, and every wait before the launch shares one limit
(``prepare_timeout``); after it, a run's end is recorded from the kill's answer when the end
event does not come, and its finish is retried until it is recorded."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

import pytest
from conftest import FAST, Harness

from heartbeat_controller.orchestration.context import Orchestration
from heartbeat_controller.orchestration.ports import PortError


async def _started(h: Harness, what: str, *, issue: str | None = None) -> str:
    agent = await h.agent()
    if issue is not None:
        await h.issue(issue)
    run_id = await h.wake(agent, issue)
    await h.called(run_id, what)
    return run_id


async def test_a_cancel_stops_a_realize_that_never_answers(h: Harness) -> None:
    h.world.script.realize_gate = asyncio.Event()  # never set: the realizer is still cloning
    run_id = await _started(h, "realize", issue="i-1")
    began = time.monotonic()
    await h.cancel(run_id)
    view = await h.finished(run_id, timeout=3)
    assert time.monotonic() - began < 2
    assert (view.status, view.error_code) == ("cancelled", "cancelled")
    assert h.world.of(run_id) == ["realize"]
    assert (await h.stages(run_id))[-1] == "cleanup"


async def test_a_cancel_stops_a_slot_request_in_flight_and_releases_what_it_may_have_got(
    h: Harness,
) -> None:
    h.world.script.slot_gate = asyncio.Event()  # the supervisor does not answer
    run_id = await _started(h, "acquire_slot")
    await h.cancel(run_id)
    view = await h.finished(run_id, timeout=3)
    assert view.status == "cancelled"
    assert h.world.of(run_id) == ["acquire_slot", "release_slot"]


@pytest.mark.parametrize(
    ("case", "code", "waiting"),
    [
        ("realize", "workspace_validation_failed", "the workspace"),
        ("pool_full", "slot_unavailable", "an adapter slot"),
        ("slot_silent", "slot_unavailable", "an adapter slot"),
    ],
)
async def test_a_run_not_ready_to_launch_within_the_limit_fails_saying_so(
    h: Harness, case: str, code: str, waiting: str
) -> None:
    h.orch.settings = dataclasses.replace(FAST, prepare_timeout=0.4)
    s = h.world.script
    if case == "realize":
        s.realize_gate = asyncio.Event()
    elif case == "pool_full":
        s.slot_refuse_always = PortError("slot_unavailable", "every slot is in use", 409)
    else:
        s.slot_gate = asyncio.Event()
    agent = await h.agent()
    issue = "i-2" if case == "realize" else None
    if issue:
        await h.issue(issue)
    run_id = await h.wake(agent, issue)
    view = await h.finished(run_id, timeout=5)
    assert (view.status, view.error_code) == ("failed", code), view
    assert view.error is not None
    assert "CLIPYARD_RUN_PREPARE_TIMEOUT" in view.error
    assert waiting in view.error
    assert "launch" not in h.world.of(run_id)
    assert (await h.stages(run_id))[-1] == "cleanup"


async def test_the_end_is_taken_from_the_kills_answer_when_no_end_event_comes(
    h: Harness,
) -> None:
    h.world.script.exit_code = None
    h.world.script.kill_sends_end = False
    run_id = await _started(h, "launch")
    await h.until(run_id, lambda v: v.stage == "result_collection")
    await h.cancel(run_id)
    view = await h.finished(run_id)
    assert view.status == "cancelled"
    assert (view.signal, view.usage, view.result) == ("SIGTERM", {"tokens": 2}, {"partial": True})
    assert (view.stdout_excerpt, view.stderr_excerpt, view.log_bytes) == (
        "working...\n", "stopping\n", 20,
    )  # fmt: skip


async def test_a_finish_that_fails_is_retried_until_it_is_recorded(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = h.app.finish_run
    failures: list[int] = []

    def flaky(*args: Any, **kwargs: Any) -> list[str]:
        if len(failures) < 8:
            failures.append(1)
            raise RuntimeError("the store is busy")
        return real(*args, **kwargs)

    monkeypatch.setattr(h.app, "finish_run", flaky)
    agent = await h.agent()
    run_id = await h.wake(agent)
    view = await h.finished(run_id, timeout=10)
    assert view.status == "succeeded"
    assert len(failures) == 8
    assert run_id not in h.orch.channels


async def test_a_cancel_heard_before_the_runs_channel_opens_is_kept_for_it(h: Harness) -> None:
    orch: Orchestration = h.orch
    assert orch.request_cancel("r-recovering") is False
    assert orch.open("r-recovering").cancel.is_set()
    assert not orch.open("r-other").cancel.is_set()
