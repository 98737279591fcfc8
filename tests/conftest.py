"""Cross-process tests share one nats-server per session; each test starts with no event stream.
The ``stack`` fixture runs the whole system (the five services as processes) for e2e tests and
benchmarks, on SQLite (the embedded default). A test or module marked ``both_stores`` runs twice,
``[sqlite]`` and ``[postgres]``: the second with every service on a fresh PostgreSQL database
(``CLIPYARD_STORE=postgres``, one ``CLIPYARD_POSTGRES_DSN``; each service keeps to its own schema).

Each test builds fresh stores, and a service's outbox relay rightly refuses to start when the
stream already holds events of its service beyond its store (a store wiped under a live stream).
So the stream left by an earlier test is deleted before the next one that uses NATS.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import nats
import nats.js.errors
import pytest

from clipyard_cli.bus import read_model_health
from contracts.subjects import EVENT_STREAM, SERVICE_NAMES

STORES = ("sqlite", "postgres")
"""The stores a ``both_stores`` test runs its stack on, in this order (also the test ids)."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run a test marked ``both_stores`` (that uses the ``stack``) once per store of
    :data:`STORES`."""
    if metafunc.definition.get_closest_marker("both_stores") is None:
        return
    if "stack_store" not in metafunc.fixturenames:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid} is marked both_stores but uses no stack"
        )
    metafunc.parametrize("stack_store", STORES, ids=STORES)


@pytest.fixture(autouse=True)
async def _fresh_event_stream(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    if "nats_server" not in request.fixturenames:
        yield
        return
    server: Any = request.getfixturevalue("nats_server")
    nc = await nats.connect(server.url)
    try:
        await nc.jetstream().delete_stream(EVENT_STREAM)
    except nats.js.errors.NotFoundError:
        pass
    finally:
        await nc.drain()
    yield


MODULES = (
    "api_gateway",
    "workspace_realizer",
    "runtime_supervisor",
    "heartbeat_controller",
    "git_credentials",
)
ADMIN_KEY = "cy_admin_e2e-0123456789abcdef0123456789abcdef"


@dataclass
class Stack:
    """A running stack: its HTTP API, home folder and service processes."""

    api: str
    home: Path
    admin_key: str
    processes: dict[str, Any]
    store: str = "sqlite"
    """``CLIPYARD_STORE`` of every service: ``sqlite`` or ``postgres``."""
    postgres_dsn: str | None = None
    """The database every service's schema lives in, when ``store`` is ``postgres``."""

    def client(self, key: str | None = None) -> httpx.AsyncClient:
        """An HTTP client of the API, authenticated with ``key`` when given."""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.AsyncClient(base_url=self.api, headers=headers, timeout=30)

    @property
    def admin(self) -> httpx.AsyncClient:
        """A client with the admin key."""
        return self.client(self.admin_key)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def stack_env() -> dict[str, str]:
    """Extra environment of every service of the ``stack`` (a test module overrides it)."""
    return {}


@pytest.fixture
def stack_store() -> str:
    """The store of the ``stack``'s services: ``sqlite``, but for a ``both_stores`` test, which is
    parametrized with each of :data:`STORES` (``pytest_generate_tests``)."""
    return "sqlite"


@pytest.fixture
def stack_store_env(stack_store: str, request: pytest.FixtureRequest) -> dict[str, str]:
    """The store settings of every service of the ``stack``: none for SQLite; for PostgreSQL
    the store and a fresh database of the session's server (``pg_database``, requested only
    then, and set up before the services start so that it is dropped only after they stopped)."""
    if stack_store == "sqlite":
        return {}
    if stack_store == "postgres":
        dsn: str = request.getfixturevalue("pg_database")
        return {"CLIPYARD_STORE": "postgres", "CLIPYARD_POSTGRES_DSN": dsn}
    raise pytest.UsageError(f"unknown stack store {stack_store!r}; use one of {STORES}")


@pytest.fixture
async def stack(
    stack_store_env: dict[str, str],
    service_process: Any,
    clipyard_home: Path,
    stack_env: dict[str, str],
    nats_server: Any,
) -> AsyncIterator[Stack]:
    """Start the five services (each a `python -m` process) and wait for a healthy API; after
    the test, every service that still answers must have projected every stored event into its
    read models (:func:`_projection_failures`), whichever the store.

    ``stack_store_env`` comes first: its database must exist before the services start and be
    dropped only after ``service_process`` stopped them (teardown runs in reverse order)."""
    port = _free_port()
    env = {
        "CLIPYARD_HTTP_PORT": str(port),
        "CLIPYARD_ADMIN_KEY": ADMIN_KEY,
        **stack_env,
        **stack_store_env,
    }
    started = await asyncio.gather(*(service_process(m, env=env) for m in MODULES))
    stack = Stack(
        api=f"http://127.0.0.1:{port}",
        home=clipyard_home,
        admin_key=ADMIN_KEY,
        processes=dict(zip(MODULES, started, strict=True)),
        store=stack_store_env.get("CLIPYARD_STORE", "sqlite"),
        postgres_dsn=stack_store_env.get("CLIPYARD_POSTGRES_DSN"),
    )
    async with httpx.AsyncClient(base_url=stack.api) as http:
        for _ in range(100):
            try:
                if (await http.get("/api/health")).status_code == 200:
                    break
            except httpx.TransportError:
                pass  # the gateway is not listening yet
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the stack never became healthy")
    yield stack
    failed = await _projection_failures(nats_server.url)
    assert failed == {}, f"stored events that failed to project into read models: {failed}"
    if stack.postgres_dsn is not None:
        _assert_all_on_postgres(stack.home, stack.postgres_dsn)


async def _projection_failures(url: str) -> dict[str, int]:
    """Each answering service's count of stored events its read models failed to project
    (``clipyard status`` shows the same), where it is not zero."""
    nc = await nats.connect(url)
    try:
        healths = await asyncio.gather(
            *(read_model_health(nc, name) for name in SERVICE_NAMES.values())
        )
    finally:
        await nc.drain()
    return {
        name: health.projection_failures
        for name, health in zip(SERVICE_NAMES.values(), healths, strict=True)
        if health is not None and health.projection_failures
    }


def _assert_all_on_postgres(home: Path, dsn: str) -> None:
    """Every service stored its events in its own schema of the PostgreSQL database, and none
    in a SQLite file of the home (a ``[postgres]`` run is not SQLite run again)."""
    import psycopg

    assert sorted((home / "data").glob("*.sqlite")) == [], "a service stored events in SQLite"
    with psycopg.connect(dsn) as db:
        schemas = {
            str(row[0])
            for row in db.execute(
                "SELECT DISTINCT table_schema FROM information_schema.tables"
                " WHERE table_schema LIKE 'clipyard\\_%'"
            )
        }
    expected = {f"clipyard_{token}" for token in SERVICE_NAMES}
    assert schemas == expected, f"schemas with tables: {sorted(schemas)}"
