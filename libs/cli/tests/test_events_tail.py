"""``clipyard events tail`` against a real nats-server: no stream yet is a message, not a trace."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from clipyard_cli.events import run_tail
from clipyard_cli.main import main
from contracts.subjects import EVENT_STREAM
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
