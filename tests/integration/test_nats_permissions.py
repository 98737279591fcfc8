"""deploy/nats/nats.conf on a real nats-server: users, passwords and subject permissions.

The server is started exactly as ``clipyard up`` starts it (``clipyard_cli.stack``: the venv's
binary, the passwords ``clipyard up`` generates, handed over in the environment), and each check
compares what the server lets through with the owner table of ARCHITECTURE §2 in
``contracts.subjects``.
"""

from __future__ import annotations

import asyncio
import io
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import nats
import nats.errors
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg

from clipyard_cli.events import run_tail
from clipyard_cli.home import NATS_USERS, ensure_passwords
from clipyard_cli.stack import (
    ManagedProcess,
    find_nats_config,
    find_nats_server,
    nats_server_env,
    start_nats_server,
    stop_process,
)
from contracts.subjects import AGGREGATE_OWNERS, SERVICES, SHARED_AGGREGATES, ServiceToken

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SETTLE = 0.3
"""Seconds to wait for messages that must not arrive (loopback delivers in well under 1 ms)."""


@dataclass(frozen=True)
class SecuredNats:
    url: str
    passwords: dict[str, str]
    process: ManagedProcess


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def secured_nats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredNats]:
    home = tmp_path_factory.mktemp("clipyard-home")
    passwords = ensure_passwords(home)
    port = _free_port()
    process = start_nats_server(
        binary=find_nats_server(),
        config=find_nats_config({}, start=REPO),
        home=home,
        passwords=passwords,
        host="127.0.0.1",
        port=port,
        base_env={"PATH": "/usr/bin:/bin"},
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            assert process.alive(), f"nats-server exited:\n{process.log_tail()}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"nats-server silent:\n{process.log_tail()}"
                time.sleep(0.05)
        yield SecuredNats(url=f"nats://127.0.0.1:{port}", passwords=passwords, process=process)
    finally:
        stop_process(process)


class Connection:
    """A client logged in as one user, collecting the server's asynchronous errors."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.nc = Client()

    async def open(self, server: SecuredNats, user: str) -> Connection:
        async def on_error(error: Exception) -> None:
            self.errors.append(str(error))

        await self.nc.connect(
            server.url,
            user=user,
            password=server.passwords[user],
            error_cb=on_error,
            allow_reconnect=False,
            connect_timeout=2,
        )
        return self

    def violations(self) -> list[str]:
        # nats-py reports them lower-cased: 'nats: permissions violation for publish to "x"'.
        return [e for e in self.errors if "permissions violation" in e.lower()]


OpenAs = Callable[[str], Awaitable[Connection]]


@pytest.fixture
async def connect(secured_nats: SecuredNats) -> AsyncIterator[OpenAs]:
    opened: list[Connection] = []

    async def open_as(user: str) -> Connection:
        connection = await Connection().open(secured_nats, user)
        opened.append(connection)
        return connection

    yield open_as
    for connection in opened:
        await connection.nc.close()


def test_the_config_is_valid_only_with_every_password(
    secured_nats: SecuredNats, tmp_path: Path
) -> None:
    config = find_nats_config({}, start=REPO)
    binary = str(find_nats_server())
    env = nats_server_env({}, tmp_path, secured_nats.passwords)
    ok = subprocess.run([binary, "-t", "-c", str(config)], env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    del env["CLIPYARD_NATS_PASSWORD_REALIZER"]
    missing = subprocess.run(
        [binary, "-t", "-c", str(config)], env=env, capture_output=True, text=True
    )
    assert missing.returncode != 0
    assert "CLIPYARD_NATS_PASSWORD_REALIZER" in missing.stdout + missing.stderr


async def test_a_wrong_password_is_refused(secured_nats: SecuredNats) -> None:
    async def quiet(error: Exception) -> None:
        pass

    for user, password in [
        ("realizer", "wrong"),
        ("realizer", secured_nats.passwords["gateway"]),
        ("nobody", "cy00"),
        ("cli", ""),
    ]:
        client = Client()
        try:
            with pytest.raises(nats.errors.Error, match="Authorization Violation"):
                await client.connect(
                    secured_nats.url,
                    user=user,
                    password=password,
                    allow_reconnect=False,
                    max_reconnect_attempts=0,
                    connect_timeout=2,
                    error_cb=quiet,
                )
        finally:
            await client.close()
            await asyncio.sleep(0)


def _event_subjects(publisher: ServiceToken) -> dict[str, bool]:
    """A probe subject for every aggregate's events, and whether ``publisher`` may publish it."""
    subjects = {
        f"ws.evt.{agg}.probed": owner == publisher for agg, owner in AGGREGATE_OWNERS.items()
    }
    for shared in SHARED_AGGREGATES:
        for service in SERVICES:
            subjects[f"ws.evt.{shared}.probed.{service}"] = service == publisher
    return subjects


@pytest.mark.parametrize("service", SERVICES)
async def test_a_service_publishes_only_its_own_events(
    connect: OpenAs, service: ServiceToken
) -> None:
    observer = await connect("cli")
    received: list[str] = []

    async def seen(msg: Msg) -> None:
        received.append(msg.subject)

    await observer.nc.subscribe("ws.evt.>", cb=seen)
    await observer.nc.flush()
    publisher = await connect(service)
    expected = _event_subjects(service)
    for subject in expected:
        await publisher.nc.publish(subject, b"{}")
    await publisher.nc.flush()
    await asyncio.sleep(SETTLE)

    allowed = sorted(s for s, ok in expected.items() if ok)
    denied = sorted(s for s, ok in expected.items() if not ok)
    assert sorted(received) == allowed
    assert len(allowed) >= 3  # its own aggregates plus operation and inbox
    violations = publisher.violations()
    assert len(violations) == len(denied)
    for subject in denied:
        assert any(f'"{subject}"' in v for v in violations), subject
    assert publisher.nc.is_connected  # a refused publish does not cost the connection


@pytest.mark.parametrize("service", SERVICES)
async def test_a_service_serves_only_its_own_queries(
    connect: OpenAs, service: ServiceToken
) -> None:
    own = await connect(service)
    await own.nc.subscribe(f"ws.qry.{service}.audit", queue="q")
    await own.nc.subscribe("$SRV.PING")
    mine = [agg for agg, owner in AGGREGATE_OWNERS.items() if owner == service]
    await own.nc.subscribe(f"ws.cmd.{mine[0]}.probe", queue="q")
    await own.nc.flush()
    await asyncio.sleep(SETTLE)
    assert own.violations() == []

    other = next(s for s in SERVICES if s != service)
    theirs = next(agg for agg, owner in AGGREGATE_OWNERS.items() if owner == other)
    await own.nc.subscribe(f"ws.qry.{other}.audit", queue="q")
    await own.nc.subscribe(f"ws.cmd.{theirs}.probe", queue="q")
    await own.nc.flush()
    await asyncio.sleep(SETTLE)
    assert len(own.violations()) == 2, own.errors


async def test_the_cli_requests_audit_but_publishes_no_event(connect: OpenAs) -> None:
    realizer = await connect("realizer")

    async def answer(msg: Msg) -> None:
        await msg.respond(b'{"kind":"ok","result":"audited"}')

    await realizer.nc.subscribe("ws.qry.realizer.audit", queue="q", cb=answer)
    await realizer.nc.flush()
    cli = await connect("cli")
    reply = await cli.nc.request("ws.qry.realizer.audit", b"{}", timeout=2)
    assert reply.data == b'{"kind":"ok","result":"audited"}'
    assert realizer.violations() == []

    await cli.nc.publish("ws.evt.workspace.realized", b"{}")
    await cli.nc.publish("ws.cmd.workspace.realize.local", b"{}")
    await cli.nc.flush()
    await asyncio.sleep(SETTLE)
    assert len(cli.violations()) == 2, cli.errors


async def test_jetstream_holds_a_services_event_and_the_cli_tails_it(
    connect: OpenAs, secured_nats: SecuredNats
) -> None:
    gateway = await connect("gateway")
    js = gateway.nc.jetstream()
    await js.add_stream(name="WS_EVENTS", subjects=["ws.evt.>"])
    realizer = await connect("realizer")
    body = (
        b'{"type":"workspace.realized.v1","aggregateId":"w-1","companyId":"c-1",'
        b'"actor":{"type":"agent","id":"a-1"},"reason":"probe"}'
    )
    ack = await realizer.nc.jetstream().publish("ws.evt.workspace.realized", body)
    assert ack.stream == "WS_EVENTS"

    cli = await connect("cli")
    with pytest.raises(nats.errors.TimeoutError):
        await cli.nc.jetstream(timeout=1.0).purge_stream("WS_EVENTS")
    assert any("$js.api.stream.purge.ws_events" in v for v in cli.violations()), cli.errors
    assert (await js.stream_info("WS_EVENTS")).state.messages == 1

    out = io.StringIO()
    env = {
        "CLIPYARD_NATS_URL": secured_nats.url,
        "CLIPYARD_NATS_USER": "cli",
        "CLIPYARD_NATS_PASSWORD": secured_nats.passwords["cli"],
    }
    code = await run_tail(env, out, type_tag="workspace.realized.v1", from_start=True, follow=False)
    assert code == 0
    line = out.getvalue().strip()
    assert line.split()[:3] == ["1", "workspace.realized.v1", "w-1"]
    assert "company=c-1" in line
    assert "actor=agent:a-1" in line
    assert "reason=probe" in line


def test_every_user_of_the_config_is_one_the_cli_generates() -> None:
    text = (REPO / "deploy" / "nats" / "nats.conf").read_text()
    users = sorted(
        line.split(":", 1)[1].strip()
        for line in text.splitlines()
        if line.strip().startswith("user:")
    )
    assert users == sorted(NATS_USERS)
