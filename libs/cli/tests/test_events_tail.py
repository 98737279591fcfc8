"""``clipyard events tail`` against a real nats-server: no stream yet is a message, not a trace;
``--type`` takes a type, a type without version or an aggregate, and a value the stream does not
carry is a clear error before NATS is asked."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import nats
import pytest

from clipyard_cli.events import run_tail
from clipyard_cli.main import main
from contracts.subjects import EVENT_STREAM
from natsbus.jetstream import ensure_event_stream
from testkit.nats_server import NatsServer, start_nats_server

pytestmark = pytest.mark.integration


@pytest.fixture
def bare_nats() -> Iterator[NatsServer]:
    """A nats-server of its own, where no service ever created the event stream."""
    server = start_nats_server()
    try:
        yield server
    finally:
        server.stop()


def _env(server: NatsServer) -> dict[str, str]:
    return {"CLIPYARD_NATS_URL": server.url, "CLIPYARD_NATS_PASSWORD": "unused-without-auth"}


async def test_tail_before_the_stream_exists_says_what_to_do(bare_nats: NatsServer) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = await run_tail(_env(bare_nats), out, follow=False, err=err)
    assert code == 1
    assert out.getvalue() == ""
    message = err.getvalue()
    assert EVENT_STREAM in message
    assert "clipyard up" in message
    assert bare_nats.url in message
    assert "Traceback" not in message


def test_the_command_exits_with_the_message_and_no_traceback(
    bare_nats: NatsServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in _env(bare_nats).items():
        monkeypatch.setenv(name, value)
    assert main(["events", "tail", "--from-start"]) == 1
    captured = capsys.readouterr()
    assert "has no event stream WS_EVENTS yet" in captured.err
    assert "Traceback" not in captured.err


PUBLISHED = [
    ("ws.evt.company.created", "company.created.v1"),
    ("ws.evt.run.queued", "run.queued.v1"),
    ("ws.evt.workspace.realized", "workspace.realized.v1"),
    ("ws.evt.run.finished", "run.finished.v1"),
    ("ws.evt.operation.finished.realizer", "operation.finished.v1"),
    ("ws.evt.runtime_service.started", "runtime_service.started.v1"),
]


@pytest.fixture
async def with_events(bare_nats: NatsServer) -> NatsServer:
    """The server with the event stream and one event of each of :data:`PUBLISHED`."""
    nc = await nats.connect(bare_nats.url)
    try:
        js = nc.jetstream()
        await ensure_event_stream(js)
        for number, (subject, type_tag) in enumerate(PUBLISHED, start=1):
            body = {"type": type_tag, "aggregateId": f"a-{number}", "companyId": "c-1"}
            await js.publish(subject, json.dumps(body).encode())
    finally:
        await nc.close()
    return bare_nats


async def _tailed(server: NatsServer, type_tag: str | list[str] | None) -> list[str]:
    out = io.StringIO()
    code = await run_tail(_env(server), out, type_tag=type_tag, from_start=True, follow=False)
    assert code == 0
    return [line.split()[1] for line in out.getvalue().splitlines()]


@pytest.mark.parametrize(
    ("type_tag", "shown"),
    [
        ("run", ["run.queued.v1", "run.finished.v1"]),  # an aggregate: a subject filter
        ("run.finished", ["run.finished.v1"]),
        ("operation.finished.v1", ["operation.finished.v1"]),  # a shared aggregate
        ("run.finished,workspace", ["workspace.realized.v1", "run.finished.v1"]),  # matched here
        (["runtime_service", "company"], ["company.created.v1", "runtime_service.started.v1"]),
        (None, [t for _, t in PUBLISHED]),
    ],
)
async def test_tail_follows_types_types_without_version_and_aggregates(
    with_events: NatsServer, type_tag: str | list[str] | None, shown: list[str]
) -> None:
    assert await _tailed(with_events, type_tag) == shown


def test_the_command_takes_an_aggregate_and_labels_each_event(
    with_events: NatsServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in _env(with_events).items():
        monkeypatch.setenv(name, value)
    assert main(["events", "tail", "--from-start", "--no-follow", "--type", "run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1:4] for line in lines] == [
        ["run.queued.v1", "Run", "queued"],
        ["run.finished.v1", "Run", "finished"],
    ]


@pytest.mark.parametrize("bad", ["Provisioned", "workspace.provisioned", "Run", "ws.evt.>"])
def test_a_type_the_stream_does_not_carry_is_a_clear_error_before_nats_is_asked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    # Nothing listens there: the filter is refused before any connection is tried.
    monkeypatch.setenv("CLIPYARD_NATS_URL", "nats://127.0.0.1:9")
    monkeypatch.setenv("CLIPYARD_NATS_PASSWORD", "unused")
    assert main(["events", "tail", "--type", bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"clipyard events: Unknown event filter in --type: {bad!r}"), err
    assert "types without their version (workspace.realized) or aggregates" in err
    assert "invalid subject token" not in err
    assert "Traceback" not in err


async def test_json_lines_carry_each_event_as_published(with_events: NatsServer) -> None:
    out = io.StringIO()
    code = await run_tail(
        _env(with_events), out, type_tag="run", from_start=True, follow=False, as_json=True
    )
    assert code == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["event"]["type"] for line in lines] == ["run.queued.v1", "run.finished.v1"]
    assert [line["subject"] for line in lines] == ["ws.evt.run.queued", "ws.evt.run.finished"]
    assert all(isinstance(line["sequence"], int) for line in lines)
