"""deploy/nats/nats.conf on a real nats-server: users, passwords and subject permissions.

The server is started exactly as ``clipyard up`` starts it (``clipyard_cli.stack``: the venv's
binary, the passwords ``clipyard up`` generates, handed over in the environment), and each check
compares what the server lets through with the owner table of ARCHITECTURE §2 in
``contracts.subjects``: private reply inboxes (``_INBOX_<user>``), a JetStream allow-list per user
(``WS_EVENTS`` only, each service's own inbox consumers), and every legitimate flow still working.
"""

from __future__ import annotations

import asyncio
import io
import socket
import subprocess
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import nats
import nats.errors
import nats.js.errors
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig
from nats.js.client import JetStreamContext

from api_gateway.adapters.bus import NatsBus
from clipyard_cli.bus import BusLogin, connect_cli, ping_service
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
from contracts.base import Struct
from contracts.credential_subjects import GIT_INVOCATION, PULL_REQUEST_FACTS
from contracts.subjects import (
    AGGREGATE_OWNERS,
    EVENT_STREAM,
    SERVICE_NAMES,
    SERVICES,
    SHARED_AGGREGATES,
    ServiceToken,
    event_filters_of,
)
from eventstore.streamcheck import last_published
from natsbus import BusClient, BusService, OrderedConsumer, RequestContext
from natsbus.connection import connect as natsbus_connect
from natsbus.connection import inbox_prefix_for
from natsbus.jetstream import ensure_event_stream, publish
from servicekit import ServiceSettings, SettingsError
from testkit.readiness import PingCheck

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SETTLE = 0.3
"""Seconds to wait for messages that must not arrive (loopback delivers in well under 1 ms)."""
DENIED = 0.5
"""Seconds a refused JetStream call waits for the answer that never comes."""
ARRIVAL = 10.0
"""Seconds to wait for what must arrive (polled: a loaded machine can take a while)."""


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

    async def open(
        self, server: SecuredNats, user: str, *, inbox_prefix: str | None = None
    ) -> Connection:
        async def on_error(error: Exception) -> None:
            self.errors.append(str(error))

        await self.nc.connect(
            server.url,
            user=user,
            password=server.passwords[user],
            inbox_prefix=inbox_prefix or inbox_prefix_for(user),
            error_cb=on_error,
            allow_reconnect=False,
            connect_timeout=2,
        )
        return self

    def violations(self) -> list[str]:
        # nats-py reports them lower-cased: 'nats: permissions violation for publish to "x"'.
        return [e.lower() for e in self.errors if "permissions violation" in e.lower()]

    def violated(self, action: str, subject: str) -> bool:
        """Whether the server refused ``action`` ("publish"/"subscription") on ``subject``."""
        return any(f'for {action} to "{subject.lower()}"' in v for v in self.violations())

    def js(self) -> JetStreamContext:
        """A JetStream context whose refused calls give up quickly."""
        return self.nc.jetstream(timeout=DENIED)


OpenAs = Callable[..., Awaitable[Connection]]


@pytest.fixture
async def connect(secured_nats: SecuredNats) -> AsyncIterator[OpenAs]:
    opened: list[Connection] = []

    async def open_as(user: str, *, inbox_prefix: str | None = None) -> Connection:
        connection = await Connection().open(secured_nats, user, inbox_prefix=inbox_prefix)
        opened.append(connection)
        return connection

    yield open_as
    for connection in opened:
        await connection.nc.close()


@pytest.fixture
async def events(connect: OpenAs) -> JetStreamContext:
    """``WS_EVENTS`` as a service provisions it; the gateway's JetStream context."""
    gateway = await connect("gateway")
    js = gateway.nc.jetstream()
    await ensure_event_stream(js)
    return js


async def _eventually(condition: Callable[[], Awaitable[bool]]) -> bool:
    """Poll ``condition`` until it holds (True) or ``ARRIVAL`` seconds have passed (False)."""
    deadline = time.monotonic() + ARRIVAL
    while not await condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


def _login(server: SecuredNats, user: str) -> dict[str, str]:
    return {
        "CLIPYARD_NATS_URL": server.url,
        "CLIPYARD_NATS_USER": user,
        "CLIPYARD_NATS_PASSWORD": server.passwords[user],
    }


async def _company_event(js: JetStreamContext, reason: str) -> int:
    """Publish a company event as the gateway's relay does; its stream sequence."""
    body = (
        b'{"type":"company.created.v1","aggregateId":"co-1","companyId":"co-1",'
        b'"actor":{"type":"admin","id":"op"},"reason":"' + reason.encode() + b'"}'
    )
    ack = await publish(js, "ws.evt.company.created", body, msg_id=f"probe:{uuid.uuid4()}")
    assert ack.stream == EVENT_STREAM
    return int(ack.seq)


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
    connect: OpenAs, events: JetStreamContext, service: ServiceToken
) -> None:
    publisher = await connect(service)
    expected = _event_subjects(service)
    marker = uuid.uuid4().hex.encode()
    for subject in expected:
        await publisher.nc.publish(subject, marker)
    await publisher.nc.flush()
    allowed = sorted(s for s, ok in expected.items() if ok)
    denied = sorted(s for s, ok in expected.items() if not ok)

    async def stored() -> list[str]:
        """What reached the stream, read back as a service reads it."""
        found: list[str] = []
        for subject in expected:
            try:
                last = await events.get_last_msg(EVENT_STREAM, subject)
            except nats.js.errors.NotFoundError:
                continue
            if last.data == marker:
                found.append(subject)
        return sorted(found)

    async def arrived() -> bool:  # JetStream stores core-NATS publishes asynchronously
        return set(allowed) <= set(await stored()) and len(publisher.violations()) >= len(denied)

    assert await _eventually(arrived), (await stored(), publisher.errors)
    await asyncio.sleep(SETTLE)  # and what must not arrive has had its chance
    assert await stored() == allowed
    assert len(allowed) >= 3  # its own aggregates plus operation and inbox
    assert len(publisher.violations()) == len(denied)
    for subject in denied:
        assert publisher.violated("publish", subject), subject
    assert publisher.nc.is_connected  # a refused publish does not cost the connection


@pytest.mark.parametrize("service", SERVICES)
async def test_a_service_serves_only_its_own_queries(
    connect: OpenAs, service: ServiceToken
) -> None:
    own = await connect(service)
    await own.nc.subscribe(f"ws.qry.{service}.audit", queue="q")
    await own.nc.subscribe("$SRV.PING")
    await own.nc.subscribe(f"$SRV.PING.{SERVICE_NAMES[service]}")
    mine = [agg for agg, owner in AGGREGATE_OWNERS.items() if owner == service]
    await own.nc.subscribe(f"ws.cmd.{mine[0]}.probe", queue="q")
    await own.nc.flush()
    await asyncio.sleep(SETTLE)
    assert own.violations() == []

    other = next(s for s in SERVICES if s != service)
    theirs = next(agg for agg, owner in AGGREGATE_OWNERS.items() if owner == other)
    await own.nc.subscribe(f"ws.qry.{other}.audit", queue="q")
    await own.nc.subscribe(f"ws.cmd.{theirs}.probe", queue="q")
    await own.nc.subscribe(f"$SRV.PING.{SERVICE_NAMES[other]}")  # answering pings for another
    await own.nc.subscribe("ws.evt.>")  # events come through JetStream consumers only
    await own.nc.flush()
    await asyncio.sleep(SETTLE)
    assert len(own.violations()) == 4, own.errors


@pytest.mark.parametrize(
    ("server", "subject"),
    [
        # Git invocations carry a token and PR lookups spend one.
        ("credentials", GIT_INVOCATION),
        ("credentials", PULL_REQUEST_FACTS),
        # A contained command runs a company's shell as its identity.
        ("supervisor", "ws.cmd.contained.run.local"),
    ],
)
async def test_only_the_realizer_may_ask(connect: OpenAs, server: str, subject: str) -> None:
    serving = await connect(server)
    asked: list[str] = []

    async def answer(msg: Msg) -> None:
        asked.append(msg.subject)
        await msg.respond(b'{"kind":"ok","result":null}')

    await serving.nc.subscribe(subject, queue="q", cb=answer)
    await serving.nc.flush()
    realizer = await connect("realizer")
    reply = await realizer.nc.request(subject, b"{}", timeout=2)
    assert reply.data == b'{"kind":"ok","result":null}'
    others = [
        u for u in ("gateway", "supervisor", "controller", "credentials", "cli") if u != server
    ]
    for user in others:
        other = await connect(user)
        with pytest.raises(nats.errors.TimeoutError):
            await other.nc.request(subject, b"{}", timeout=DENIED)
        assert other.violated("publish", subject), (user, other.errors)
    assert asked == [subject]


@pytest.mark.parametrize("user", NATS_USERS)
async def test_every_user_reads_only_its_own_reply_inbox(connect: OpenAs, user: str) -> None:
    conn = await connect(user)
    await conn.nc.subscribe(f"{inbox_prefix_for(user)}.>")
    await conn.nc.flush()
    await asyncio.sleep(SETTLE)
    assert conn.violations() == []

    foreign = ["_INBOX.>", ">", *(f"{inbox_prefix_for(u)}.>" for u in NATS_USERS if u != user)]
    for subject in foreign:
        await conn.nc.subscribe(subject)
    await conn.nc.flush()
    await asyncio.sleep(SETTLE)
    for subject in foreign:
        assert conn.violated("subscription", subject), (subject, conn.errors)


async def test_replies_reach_their_requester_only(connect: OpenAs) -> None:
    realizer = await connect("realizer")

    async def answer(msg: Msg) -> None:
        await msg.respond(b'{"kind":"ok","result":"audited"}')

    await realizer.nc.subscribe("ws.qry.realizer.audit", queue="q", cb=answer)
    cli = await connect("cli")
    snooped: list[str] = []

    async def snoop(msg: Msg) -> None:
        snooped.append(msg.subject)

    for subject in ("_INBOX.>", "_INBOX_gateway.>"):
        await cli.nc.subscribe(subject, cb=snoop)
    await realizer.nc.flush()
    await cli.nc.flush()

    gateway = await connect("gateway")
    reply = await gateway.nc.request("ws.qry.realizer.audit", b"{}", timeout=2)
    assert reply.data == b'{"kind":"ok","result":"audited"}'
    assert reply.subject.startswith("_INBOX_gateway.")
    # The CLI neither reads the gateway's reply nor can it answer the gateway's requests.
    await cli.nc.publish(reply.subject, b'{"kind":"ok","result":"forged"}')
    await cli.nc.flush()
    await asyncio.sleep(SETTLE)
    assert snooped == []
    assert cli.violated("subscription", "_INBOX.>")
    assert cli.violated("subscription", "_INBOX_gateway.>")
    assert cli.violated("publish", reply.subject)
    assert realizer.violations() == []

    # A client that keeps the shared default prefix gets no reply at all.
    shared = await connect("cli", inbox_prefix="_INBOX")
    with pytest.raises(nats.errors.TimeoutError):
        await shared.nc.request("ws.qry.realizer.audit", b"{}", timeout=DENIED)
    assert any('subscription to "_inbox.' in v for v in shared.violations()), shared.errors


async def test_a_requester_cannot_aim_a_services_reply_elsewhere(
    connect: OpenAs, events: JetStreamContext
) -> None:
    realizer = await connect("realizer")

    async def answer_empty(msg: Msg) -> None:
        await msg.respond(b"")  # the worst reply: an empty body is a valid JetStream API call

    await realizer.nc.subscribe("ws.qry.realizer.audit", queue="q", cb=answer_empty)
    await realizer.nc.flush()
    before = (await events.stream_info(EVENT_STREAM)).state.messages
    cli = await connect("cli")
    aimed = [
        "$JS.API.STREAM.DELETE.WS_EVENTS",
        "$JS.API.CONSUMER.DELETE.WS_EVENTS.inbox-supervisor-realizer",
        "ws.evt.company.created",
    ]
    for reply_to in aimed:
        await cli.nc.publish("ws.qry.realizer.audit", b"{}", reply=reply_to)
    await cli.nc.flush()

    async def all_refused() -> bool:  # the realizer's answers, each refused by the server
        return all(realizer.violated("publish", reply_to) for reply_to in aimed)

    assert await _eventually(all_refused), realizer.errors
    assert (await events.stream_info(EVENT_STREAM)).state.messages == before


class Probe(Struct, frozen=True, kw_only=True):
    remote: str


async def test_services_and_the_cli_request_over_their_private_inboxes(
    secured_nats: SecuredNats,
) -> None:
    def settings(user: ServiceToken) -> ServiceSettings:
        return ServiceSettings.from_env(SERVICE_NAMES[user], _login(secured_nats, user))

    assert settings("realizer").nats.inbox_prefix == "_INBOX_realizer"
    assert ServiceSettings.from_env("git-credentials", {}).nats.inbox_prefix == "_INBOX"

    async def resolve(request: Probe, ctx: RequestContext) -> dict[str, str]:
        return {"remote": request.remote, "token": "resolved"}

    opened: list[Client] = []
    try:
        credentials = settings("credentials").nats
        server_nc = await natsbus_connect(
            credentials.url,
            name="git-credentials",
            user=credentials.user,
            password=credentials.password,
            inbox_prefix=credentials.inbox_prefix,
        )
        opened.append(server_nc)
        service = await BusService.start(server_nc, name="git-credentials", version="0.1.0")
        await service.add_endpoint("probe", "ws.qry.credential.probe", resolve, Probe)

        # A service (natsbus.connect derives the prefix from the user).
        realizer_nc = await natsbus_connect(
            secured_nats.url,
            name="workspace-realizer",
            user="realizer",
            password=secured_nats.passwords["realizer"],
        )
        opened.append(realizer_nc)
        assert realizer_nc.new_inbox().startswith("_INBOX_realizer.")
        result = await BusClient(realizer_nc).call(
            "ws.qry.credential.probe", Probe(remote="origin"), dict[str, str], timeout=2
        )
        assert result == {"remote": "origin", "token": "resolved"}

        # The CLI pings it (micro's $SRV answers reach the CLI's inbox).
        cli_nc = await connect_cli(
            BusLogin(url=secured_nats.url, user="cli", password=secured_nats.passwords["cli"])
        )
        opened.append(cli_nc)
        assert cli_nc.new_inbox().startswith("_INBOX_cli.")
        ping = await ping_service(cli_nc, "git-credentials")
        assert ping is not None
        assert ping.name == "git-credentials"

        # The test kit's readiness ping, as the service's own user.
        check = PingCheck(
            url=secured_nats.url,
            user="credentials",
            password=secured_nats.passwords["credentials"],
            subject="$SRV.PING.git-credentials",
        )
        try:
            assert await check()
        finally:
            await check.aclose()
        await service.stop()
    finally:
        for nc in opened:
            await nc.close()


async def test_a_name_that_cannot_be_an_inbox_is_refused_before_connecting(
    secured_nats: SecuredNats,
) -> None:
    assert inbox_prefix_for(None) == "_INBOX"
    with pytest.raises(ValueError, match="cannot name a reply inbox"):
        inbox_prefix_for("cli.>")
    with pytest.raises(SettingsError, match="CLIPYARD_NATS_USER"):
        ServiceSettings.from_env("api-gateway", {"CLIPYARD_NATS_USER": "gate way"})
    with pytest.raises(ValueError, match="not a subject without wildcards"):
        await natsbus_connect(secured_nats.url, name="x", inbox_prefix="_INBOX_*")


async def _refused(call: Awaitable[Any]) -> None:
    with pytest.raises(nats.errors.TimeoutError):
        await call


async def test_only_services_provision_the_event_stream_and_nobody_destroys_it(
    connect: OpenAs, events: JetStreamContext
) -> None:
    seq = await _company_event(events, "kept")
    for service in SERVICES:  # each provisions WS_EVENTS idempotently at start
        info = await ensure_event_stream((await connect(service)).nc.jetstream())
        assert info.config.deny_delete
        assert info.config.deny_purge

    sniff = StreamConfig(name="SNIFF", subjects=["ws.cmd.>", "ws.qry.>"])
    cli = await connect("cli")
    realizer = await connect("realizer")
    for conn in (cli, realizer):
        await _refused(conn.js().add_stream(sniff))
        assert conn.violated("publish", "$JS.API.STREAM.CREATE.SNIFF"), conn.errors
        await _refused(conn.js().purge_stream(EVENT_STREAM))
        assert conn.violated("publish", "$JS.API.STREAM.PURGE.WS_EVENTS"), conn.errors
        await _refused(conn.js().delete_msg(EVENT_STREAM, seq))
        assert conn.violated("publish", "$JS.API.STREAM.MSG.DELETE.WS_EVENTS"), conn.errors
        await _refused(conn.js().delete_stream(EVENT_STREAM))
        assert conn.violated("publish", "$JS.API.STREAM.DELETE.WS_EVENTS"), conn.errors

    # The CLI cannot shorten the stream's retention (max_age=0.5 s wiped it).
    wiping = (await events.stream_info(EVENT_STREAM)).config
    wiping.max_age = 0.5
    await _refused(cli.js().update_stream(wiping))
    assert cli.violated("publish", "$JS.API.STREAM.UPDATE.WS_EVENTS"), cli.errors

    assert (await events.account_info()).streams == 1  # WS_EVENTS, no SNIFF
    info = await events.stream_info(EVENT_STREAM)
    assert round(info.config.max_age or 0) == 30 * 24 * 3600
    assert (await events.get_msg(EVENT_STREAM, seq)).seq == seq


async def test_a_durable_inbox_consumer_is_its_services_alone(
    connect: OpenAs, events: JetStreamContext
) -> None:
    durable = "inbox-realizer-gateway"
    realizer = await connect("realizer")
    handled: asyncio.Queue[int] = asyncio.Queue()

    async def handle(msg: Msg) -> None:
        await handled.put(msg.metadata.sequence.stream)

    async def poison(msg: Msg, error: Exception) -> None:
        raise AssertionError(f"no poison expected: {error}")

    def inbox() -> OrderedConsumer:
        return OrderedConsumer(
            realizer.nc.jetstream(),
            durable=durable,
            filter_subjects=event_filters_of("gateway"),
            handler=handle,
            on_poison=poison,
        )

    # The realizer's inbox reads the gateway's events, in order, and its acks are confirmed.
    consumer = inbox()
    info = await consumer.start()
    first = await _company_event(events, "first")
    try:
        while (got := await asyncio.wait_for(handled.get(), 5)) < first:
            pass  # events of earlier tests come first (deliver all)
        assert got == first
    finally:
        await consumer.stop()
    assert info.name == durable

    # While it is stopped, nobody else may take, ack, change or delete its events or itself.
    waiting = await _company_event(events, "waiting")
    cli = await connect("cli")
    supervisor = await connect("supervisor")
    ack = f"$JS.ACK.WS_EVENTS.{durable}.1.{waiting}.{waiting}.1.0"
    for thief in (cli, supervisor):
        pull = await thief.js().pull_subscribe_bind(durable=durable, stream=EVENT_STREAM)
        with pytest.raises(nats.errors.TimeoutError):
            await pull.fetch(1, timeout=DENIED)
        assert thief.violated("publish", f"$JS.API.CONSUMER.MSG.NEXT.WS_EVENTS.{durable}")
        await thief.nc.publish(ack, b"+ACK")
        await thief.nc.flush()
        await asyncio.sleep(SETTLE)
        assert thief.violated("publish", ack), thief.errors
        await _refused(thief.js().delete_consumer(EVENT_STREAM, durable))
        assert thief.violated("publish", f"$JS.API.CONSUMER.DELETE.WS_EVENTS.{durable}")
    await _refused(supervisor.js().add_consumer(EVENT_STREAM, inbox().config()))
    assert supervisor.violated("publish", f"$JS.API.CONSUMER.CREATE.WS_EVENTS.{durable}")
    # Its own consumers are the realizer's to delete neither (only the server's inactivity is).
    await _refused(realizer.js().delete_consumer(EVENT_STREAM, durable))

    # The realizer's inbox finds the event still waiting for it.
    consumer = inbox()
    await consumer.start()
    try:
        assert await asyncio.wait_for(handled.get(), 5) == waiting
    finally:
        await consumer.stop()
    state = await realizer.nc.jetstream().consumer_info(EVENT_STREAM, durable)
    assert state.ack_floor is not None
    assert state.ack_floor.stream_seq == waiting


@pytest.mark.parametrize("service", SERVICES)
async def test_each_service_runs_only_its_own_inbox_consumers(
    connect: OpenAs, events: JetStreamContext, service: ServiceToken
) -> None:
    conn = await connect(service)

    async def nothing(msg: Msg) -> None:
        pass

    async def poison(msg: Msg, error: Exception) -> None:
        pass

    for upstream in SERVICES:
        if upstream == service:
            continue
        consumer = OrderedConsumer(
            conn.nc.jetstream(),
            durable=f"inbox-{service}-{upstream}",
            filter_subjects=event_filters_of(upstream),
            handler=nothing,
            on_poison=poison,
        )
        info = await consumer.start()
        await consumer.stop()
        assert info.name == f"inbox-{service}-{upstream}"
    assert conn.violations() == []
    # Another service's name is refused, in every form of consumer creation.
    other = next(s for s in SERVICES if s != service)
    stolen = f"inbox-{other}-{service}"
    js = conn.js()
    await _refused(js.add_consumer(EVENT_STREAM, durable_name=stolen))
    await _refused(js.add_consumer(EVENT_STREAM, durable_name=stolen, name=stolen))
    assert conn.violated("publish", f"$JS.API.CONSUMER.DURABLE.CREATE.WS_EVENTS.{stolen}")
    assert conn.violated("publish", f"$JS.API.CONSUMER.CREATE.WS_EVENTS.{stolen}")


async def test_the_relay_start_check_reads_the_stream(
    connect: OpenAs, events: JetStreamContext
) -> None:
    gateway = await connect("gateway")
    notification = 10**9 + uuid.uuid4().int % 10**6
    ack = await publish(
        gateway.nc.jetstream(),
        "ws.evt.company.created",
        b"{}",
        msg_id=f"gateway:{notification}",
        headers={"Clipyard-Notification-Id": str(notification), "Clipyard-Origin": "co-1:1"},
    )
    found = await last_published(gateway.nc.jetstream(), "gateway")
    assert found is not None
    assert (found.notification_id, found.stream_sequence) == (notification, ack.seq)
    assert gateway.violations() == []


async def test_the_gateways_sse_and_the_cli_tail_read_the_stream(
    connect: OpenAs, events: JetStreamContext, secured_nats: SecuredNats
) -> None:
    seq = await _company_event(events, "probe")

    # The gateway's SSE feed: its own named ephemeral consumer (api_gateway.adapters.bus.NatsBus), gone
    # once the feed is closed.
    gateway = await connect("gateway")
    consumers = (await events.stream_info(EVENT_STREAM)).state.consumer_count
    bus = NatsBus(gateway.nc, gateway.nc.jetstream(), BusClient(gateway.nc))
    feed = bus.events(after_sequence=seq - 1)
    assert isinstance(feed, AsyncGenerator)
    try:
        streamed = await asyncio.wait_for(anext(feed), 5)
        assert (await events.stream_info(EVENT_STREAM)).state.consumer_count == consumers + 1
        later = await _company_event(events, "live")
        followed = await asyncio.wait_for(anext(feed), 5)
    finally:
        await feed.aclose()
    assert (streamed.sequence, streamed.subject) == (seq, "ws.evt.company.created")
    assert followed.sequence == later
    assert (await events.stream_info(EVENT_STREAM)).state.consumer_count == consumers
    assert gateway.violations() == []

    # `clipyard events tail` as user cli.
    out = io.StringIO()
    code = await run_tail(
        _login(secured_nats, "cli"),
        out,
        type_tag="company.created.v1",
        from_start=True,
        follow=False,
    )
    assert code == 0
    line = next(x for x in out.getvalue().splitlines() if x.split()[0] == str(seq))
    assert line.split()[1:5] == ["company.created.v1", "Company", "created", "co-1"]
    assert "actor=admin:op" in line
    assert "reason=probe" in line
    assert (await events.stream_info(EVENT_STREAM)).state.consumer_count == consumers


def _durables() -> list[str]:
    return [f"inbox-{s}-{u}" for s in SERVICES for u in SERVICES if s != u]


@pytest.mark.parametrize("user", ["gateway", "cli"])
async def test_the_event_readers_cannot_create_or_alter_a_durable_inbox_consumer(
    connect: OpenAs, events: JetStreamContext, user: str
) -> None:
    durable = "inbox-realizer-gateway"
    realizer = await connect("realizer")
    wanted = ConsumerConfig(
        name=durable,
        durable_name=durable,
        filter_subjects=list(event_filters_of("gateway")),
        ack_policy=AckPolicy.EXPLICIT,
    )
    await realizer.nc.jetstream().add_consumer(EVENT_STREAM, wanted)
    reader = await connect(user)
    js = reader.js()
    # Rewriting its filter and giving it an inactivity timeout (the server would delete it), by
    # every API: named (with and without a filter token), legacy durable, and the unnamed one
    # that hides the name in the body.
    hijack = ConsumerConfig(
        name=durable,
        durable_name=durable,
        filter_subject="ws.evt.company.>",
        ack_policy=AckPolicy.EXPLICIT,
        inactive_threshold=1.0,
    )
    await _refused(js.add_consumer(EVENT_STREAM, hijack))
    assert reader.violated(
        "publish", f"$JS.API.CONSUMER.CREATE.WS_EVENTS.{durable}.ws.evt.company.>"
    )
    await _refused(js.add_consumer(EVENT_STREAM, hijack, filter_subject=None))
    assert reader.violated("publish", f"$JS.API.CONSUMER.CREATE.WS_EVENTS.{durable}")
    await _refused(js.add_consumer(EVENT_STREAM, hijack, name=None))
    assert reader.violated("publish", f"$JS.API.CONSUMER.DURABLE.CREATE.WS_EVENTS.{durable}")
    body = msgspec.json.encode({"stream_name": EVENT_STREAM, "config": hijack.as_dict()})
    with pytest.raises(nats.errors.TimeoutError):
        await reader.nc.request("$JS.API.CONSUMER.CREATE.WS_EVENTS", body, timeout=DENIED)
    assert reader.violated("publish", "$JS.API.CONSUMER.CREATE.WS_EVENTS")
    await _refused(js.delete_consumer(EVENT_STREAM, durable))
    assert reader.violated("publish", f"$JS.API.CONSUMER.DELETE.WS_EVENTS.{durable}")

    # Every durable inbox consumer (the gateway keeps creating and pulling its own) is denied.
    foreign = [d for d in _durables() if not d.startswith(f"inbox-{user}-")]
    probes = [f"$JS.API.CONSUMER.DELETE.WS_EVENTS.{d}" for d in _durables()]
    for name in foreign:
        probes += [
            f"$JS.API.CONSUMER.CREATE.WS_EVENTS.{name}",
            f"$JS.API.CONSUMER.CREATE.WS_EVENTS.{name}.ws.evt.>",
            f"$JS.API.CONSUMER.MSG.NEXT.WS_EVENTS.{name}",
        ]
    for subject in probes:
        await reader.nc.publish(subject, b"", reply=reader.nc.new_inbox())
    await reader.nc.flush()
    await asyncio.sleep(SETTLE)
    assert [p for p in probes if not reader.violated("publish", p)] == []

    state = await realizer.nc.jetstream().consumer_info(EVENT_STREAM, durable)
    assert state.config.filter_subjects == list(event_filters_of("gateway"))
    assert state.config.filter_subject is None
    assert not state.config.inactive_threshold


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


async def test_the_event_stream_refuses_purges_and_message_deletes_to_anyone(
    nats_server: Any,
) -> None:
    # An unrestricted client (the test kit's server has no users): the stream's own flags hold.
    nc = await nats.connect(nats_server.url)
    try:
        js = nc.jetstream()
        await js.add_stream(name=EVENT_STREAM, subjects=["ws.evt.>"])  # made before the flags
        ack = await js.publish("ws.evt.company.created", b"{}")
        info = await ensure_event_stream(js)
        assert info.config.deny_delete
        assert info.config.deny_purge
        with pytest.raises(nats.js.errors.APIError, match="purge not permitted"):
            await js.purge_stream(EVENT_STREAM)
        with pytest.raises(nats.js.errors.APIError, match="delete not permitted"):
            await js.delete_msg(EVENT_STREAM, ack.seq)
        assert (await js.stream_info(EVENT_STREAM)).state.messages == 1
        # Deleting the whole stream is another API (no user of nats.conf has it; tests reset).
        assert await js.delete_stream(EVENT_STREAM)
    finally:
        await nc.close()


def test_every_user_of_the_config_is_one_the_cli_generates() -> None:
    text = (REPO / "deploy" / "nats" / "nats.conf").read_text()
    users = sorted(
        line.split(":", 1)[1].strip()
        for line in text.splitlines()
        if line.strip().startswith("user:")
    )
    assert users == sorted(NATS_USERS)


@pytest.mark.parametrize("service", sorted(SERVICES))
async def test_replicas_answer_and_the_cli_asks_their_own_replay_and_held_subjects(
    connect: OpenAs, service: ServiceToken
) -> None:
    # `clipyard replay --verify` asks each replica on `<replay subject>.<micro id>`, and a
    # requester asks every instance who holds a request on `$SRV.HELD.<service>`.
    own = await connect(service)
    name = SERVICE_NAMES[service]
    await own.nc.subscribe(f"ws.qry.{service}.replay_verify.abc123", queue="q")
    await own.nc.subscribe(f"$SRV.HELD.{name}")
    await own.nc.flush()
    cli = await connect("cli")
    await cli.nc.publish(f"ws.qry.{service}.replay_verify.abc123", b"")
    await cli.nc.publish(f"$SRV.HELD.{name}", b"")
    await cli.nc.flush()
    await asyncio.sleep(SETTLE)
    assert own.violations() == [], own.errors
    assert cli.violations() == [], cli.errors


async def test_only_the_supervisor_serves_the_node_registry_and_the_cli_may_list_it(
    connect: OpenAs,
) -> None:
    supervisor = await connect("supervisor")

    async def answer(msg: Msg) -> None:
        await msg.respond(b'{"kind":"ok","result":[]}')

    await supervisor.nc.subscribe("ws.qry.node.list", queue="q", cb=answer)
    await supervisor.nc.subscribe("ws.qry.node.info.nodea", queue="q", cb=answer)
    await supervisor.nc.flush()
    # Another node's supervisor asks this one; the gateway and the CLI list them.
    for user, subject in (
        ("supervisor", "ws.qry.node.info.nodea"),
        ("gateway", "ws.qry.node.list"),
        ("cli", "ws.qry.node.list"),
    ):
        asker = await connect(user)
        reply = await asker.nc.request(subject, b"{}", timeout=2)
        assert reply.data == b'{"kind":"ok","result":[]}', (user, subject)
    assert supervisor.violations() == []
    # No other service may answer for a node, and the CLI may not ask a node directly.
    realizer = await connect("realizer")
    await realizer.nc.subscribe("ws.qry.node.list", queue="q")
    await realizer.nc.flush()
    cli = await connect("cli")
    await cli.nc.publish("ws.qry.node.info.nodea", b"{}")
    await cli.nc.flush()
    await asyncio.sleep(SETTLE)
    assert len(realizer.violations()) == 1, realizer.errors
    assert len(cli.violations()) == 1, cli.errors
