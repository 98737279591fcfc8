"""The realizer's two parts as two processes would run them (``CLIPYARD_REALIZER_PART``), here two
runtimes on one SQLite store and a real nats-server: each serves only its own endpoints, what one
saves the other finds at once, and the host part alone holds its node's lease (the reaper's)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import nats
import pytest

from contracts import workspace_subjects as subjects
from contracts.base import Actor, ErrorReply, Ok, Principal
from contracts.workspace_commands import (
    CreateProject,
    CreateProjectWorkspace,
    ListProjectWorkspaces,
)
from natsbus import BusClient
from servicekit import ServiceRuntime, ServiceSettings, start_service
from testkit.nats_server import start_nats_server
from workspace_realizer.adapters.host import HostPorts, NoCredentials
from workspace_realizer.app import build_spec
from workspace_realizer.orchestration.host_lease import HostLeaseRefusedError
from workspace_realizer.settings import RealizerSettings

pytestmark = pytest.mark.integration

COMPANY = "9d6c2c1e-0000-4000-8000-00000000c0de"
BOARD = Principal(company_id=COMPANY, actor=Actor(type="board", id="board-key"))


@pytest.fixture
def own_nats(tmp_path: Path) -> Iterator[Any]:
    server = start_nats_server(store_dir=tmp_path / "nats")
    yield server
    server.stop()


Start = Callable[..., Awaitable[ServiceRuntime]]


@pytest.fixture
async def start_part(
    own_nats: Any, tmp_path: Path, git: Any, commands: Any, pull_requests: Any
) -> AsyncIterator[Start]:
    """``await start_part(part)``: a realizer serving ``part`` on the shared store."""
    ports = HostPorts(
        git=git, commands=commands, credentials=NoCredentials(), pull_requests=pull_requests
    )
    async with AsyncExitStack() as stack:

        async def start(part: str, instance: str | None = None) -> ServiceRuntime:
            env = {
                "CLIPYARD_HOME": str(tmp_path / "home"),
                "CLIPYARD_NATS_URL": own_nats.url,
                "CLIPYARD_STORE": "sqlite",
                "CLIPYARD_INSTANCE_ID": instance or f"realizer-{part}",
                "CLIPYARD_LEASE_TTL": "1",
            }
            service = ServiceSettings.from_env("workspace-realizer", env)
            settings = RealizerSettings(service=service, part=part, reaper_interval=3600)
            return await start_service(
                build_spec(settings, ports), settings.service, stack, asyncio.Event()
            )

        yield start


async def _ask(bus: BusClient, subject: str, message: Any) -> Any:
    return await bus.request(subject, message, timeout=10.0)


async def test_each_part_serves_its_own_endpoints_from_one_store(
    own_nats: Any, start_part: Start, company_created: Any, tmp_path: Path
) -> None:
    nc = await nats.connect(own_nats.url)
    bus = BusClient(nc)
    try:
        company = await start_part("company")
        project_create = CreateProject(principal=BOARD, company_id=COMPANY, name="Web")
        checkout = tmp_path / "repo"
        checkout.mkdir()

        def source(project_id: str) -> CreateProjectWorkspace:
            return CreateProjectWorkspace(
                principal=BOARD, project_id=project_id, name="main", cwd=str(checkout)
            )

        # The company-wide part alone: projects are served, host work finds nobody.
        created = await _ask(bus, subjects.PROJECT_CREATE, project_create)
        assert isinstance(created, Ok), created
        project = created.result["id"]
        alone = await _ask(bus, subjects.create_project_workspace("local"), source(project))
        assert isinstance(alone, ErrorReply)
        assert alone.status == 503, alone
        await company_created(nc, company, COMPANY)

        # The host part beside it: a project made through the company-wide part gets its
        # project workspace through the host part at once (a lookup that misses reads the
        # store first); a list converges within a second (SQLite is polled every 0.2 s).
        host = await start_part("host")
        for n in range(5):
            made = await _ask(bus, subjects.PROJECT_CREATE, CreateProject(
                principal=BOARD, company_id=COMPANY, name=f"p{n}"))  # fmt: skip
            assert isinstance(made, Ok), made
            workspace = await _ask(
                bus, subjects.create_project_workspace("local"), source(made.result["id"])
            )
            assert isinstance(workspace, Ok), workspace
            ask = ListProjectWorkspaces(principal=BOARD, project_id=made.result["id"])
            began = asyncio.get_running_loop().time()
            while True:
                listed = await _ask(bus, subjects.PROJECT_WORKSPACE_LIST, ask)
                assert isinstance(listed, Ok), listed
                ids = [w["id"] for w in listed.result["items"]]
                if ids or asyncio.get_running_loop().time() - began > 1.0:
                    break
                await asyncio.sleep(0.02)
            assert ids == [workspace.result["id"]]

        # Only the host part holds (and asks for) its node's lease; the reaper runs there.
        async def host_lease_holder() -> str | None:
            leases = await host.store(host.app.lease_table.leases)
            return next((r.holder for r in leases if r.name == "host:local"), None)

        for _ in range(100):
            if await host_lease_holder() is not None:
                break
            await asyncio.sleep(0.05)
        assert await host_lease_holder() == "realizer-host"
        assert company.settings.instance_id == "realizer-company"
        # A second host part of the same node is refused at start, saying why and what to do.
        with pytest.raises(HostLeaseRefusedError, match=r"held by realizer-host.*one host part"):
            await start_part("host", "realizer-host-2")
    finally:
        await nc.drain()
