"""Long work through a real service: answered in time, or accepted and polled to its result."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import msgspec
import nats
import pytest

from contracts import subjects
from contracts.base import Accepted, Actor, ErrorReply, Ok, Principal, Query
from contracts.events import AnyEvent
from contracts.service import GetOperation, OperationFinished, OperationView
from eventstore import ServiceApplication, acting, build_application, system_cause
from natsbus import BusClient, RequestContext
from servicekit import ServiceRuntime, ServiceSettings, ServiceSpec, start_service
from servicekit.operations import Operation

pytestmark = pytest.mark.integration

OPERATOR = Principal(company_id="c-1", actor=Actor(type="board", id="key-1"))


class Brew(Query, tag="test.brew.v1", kw_only=True, frozen=True):
    seconds: float
    fail: bool = False


class Tea(msgspec.Struct, frozen=True, kw_only=True):
    kind: str


class BrewError(Exception):
    code = "state_conflict"
    status = 409


class KettleApplication(ServiceApplication):
    """No read models: operations are loaded from the store."""


async def _register(runtime: ServiceRuntime) -> None:
    async def brew(request: Brew, ctx: RequestContext) -> Tea | Accepted:
        async def work(operation_id: str) -> Tea:
            await asyncio.sleep(request.seconds)
            if request.fail:
                raise BrewError("the kettle is empty; fill it and try again")
            return Tea(kind="green")

        return await runtime.operations.run("brew", work, ctx=ctx, company_id="c-1")

    await runtime.service.add_endpoint("brew", "test.cmd.brew", brew, Brew)


SPEC = ServiceSpec(
    token="realizer",
    name="test-operations",
    version="0.0.1",
    application_class=KettleApplication,
    to_contract=lambda _event: None,
    register=_register,
)


def _settings(home: Path, nats_url: str) -> ServiceSettings:
    return ServiceSettings.from_env(
        "test-operations", {"CLIPYARD_HOME": str(home), "CLIPYARD_NATS_URL": nats_url}
    )


async def _poll(bus: BusClient, operation_id: str) -> OperationView:
    for _ in range(100):
        view = await bus.call(
            subjects.service_query("realizer", "operation"),
            GetOperation(principal=OPERATOR, operation_id=operation_id),
            OperationView,
            timeout=5,
        )
        if view.status != "running":
            return view
        await asyncio.sleep(0.05)
    raise AssertionError("the operation never finished")


async def test_quick_work_answers_ok_and_slow_work_is_accepted_then_polled(
    tmp_path: Path, nats_server: Any
) -> None:
    async with AsyncExitStack() as stack:
        await start_service(SPEC, _settings(tmp_path, nats_server.url), stack, asyncio.Event())
        nc = await nats.connect(nats_server.url)
        stack.push_async_callback(nc.drain)
        bus = BusClient(nc)
        # Work that ends before the deadline answers `ok` with its result.
        quick = await bus.request(
            "test.cmd.brew", Brew(principal=OPERATOR, seconds=0.01), timeout=5
        )
        assert isinstance(quick, Ok)
        assert quick.result == {"kind": "green"}
        # Work that outlives the deadline answers `accepted` with an operation id, not a timeout.
        slow = await bus.request(
            "test.cmd.brew", Brew(principal=OPERATOR, seconds=1.2), timeout=0.8
        )
        assert isinstance(slow, Accepted)
        # Polling shows it running, then its result: what the synchronous call would have returned.
        view = await _poll(bus, slow.operation_id)
        assert (view.kind, view.status, view.result) == ("brew", "succeeded", {"kind": "green"})
        assert view.finished_at is not None
        # A failure in time is the same error reply the caller would get without operations.
        failed = await bus.request(
            "test.cmd.brew", Brew(principal=OPERATOR, seconds=0.01, fail=True), timeout=5
        )
        assert isinstance(failed, ErrorReply)
        assert (failed.code, failed.status) == ("state_conflict", 409)
        assert "kettle" in failed.message


async def test_finished_operations_are_published_for_waiting_services(
    tmp_path: Path, nats_server: Any
) -> None:
    nc = await nats.connect(nats_server.url)
    received: asyncio.Queue[Any] = asyncio.Queue()

    async def collect(msg: Any) -> None:
        await received.put(msgspec.json.decode(msg.data, type=AnyEvent))

    await nc.subscribe("ws.evt.operation.finished.realizer", cb=collect)
    async with AsyncExitStack() as stack:
        await start_service(SPEC, _settings(tmp_path, nats_server.url), stack, asyncio.Event())
        slow = await BusClient(nc).request(
            "test.cmd.brew", Brew(principal=OPERATOR, seconds=0.6), timeout=0.5
        )
        assert isinstance(slow, Accepted)
        finished = await asyncio.wait_for(received.get(), 10)
        assert isinstance(finished, OperationFinished)
        assert finished.aggregate_id == slow.operation_id
        assert (finished.kind, finished.status, finished.company_id) == ("brew", "succeeded", "c-1")
        assert finished.result == {"kind": "green"}
    await nc.drain()


async def test_operation_cut_short_by_a_crash_is_failed_at_restart(
    tmp_path: Path, nats_server: Any
) -> None:
    settings = _settings(tmp_path, nats_server.url)
    # A crash left an operation recorded as running (no finish was ever saved).
    app = build_application(KettleApplication, service="realizer", settings=settings.store)
    with acting(system_cause("test-operations", "before the crash")):
        stranded = Operation(kind="brew", company_id="c-1", subject_id=None)
        app.save(stranded)
    app.close()
    async with AsyncExitStack() as stack:
        runtime = await start_service(SPEC, settings, stack, asyncio.Event())
        view = await runtime.operations.get(str(stranded.id))
        assert view is not None
        assert view.status == "failed"
        assert view.error is not None
        assert view.error["code"] == "interrupted"
