"""The event stream: idempotent provisioning and de-duplicated publishing, on a real server."""

from __future__ import annotations

import contextlib
import logging

import nats.js.errors
import pytest
from nats.js.api import StorageType
from nats.js.client import JetStreamContext

from contracts.subjects import EVENT_STREAM
from natsbus import MAX_MESSAGE_BYTES, MessageTooLargeError, ensure_event_stream, publish
from natsbus.jetstream import DEFAULT_DUPLICATE_WINDOW, DEFAULT_MAX_AGE, event_stream_config

pytestmark = pytest.mark.integration


async def test_provisioning_is_idempotent(js: JetStreamContext, token: str) -> None:
    with contextlib.suppress(nats.js.errors.NotFoundError):
        # Another test of the session may have left the stream looser (a CLI test makes it with
        # the server's defaults: no age limit), which no service lowers: back to the defaults.
        await js.update_stream(event_stream_config())
    first = await ensure_event_stream(js)
    config = first.config
    assert config.name == EVENT_STREAM
    assert config.subjects == ["ws.evt.>"]
    assert config.storage == StorageType.FILE
    assert config.duplicate_window == DEFAULT_DUPLICATE_WINDOW
    assert config.max_age == DEFAULT_MAX_AGE
    assert config.max_msg_size == MAX_MESSAGE_BYTES
    ack = await publish(js, f"ws.evt.{token}.happened", b"{}")
    # A second call changes nothing and loses nothing.
    second = await ensure_event_stream(js)
    assert second.config == config
    assert second.created == first.created
    assert second.state.last_seq >= ack.seq


async def test_provisioning_raises_lower_settings_in_place_and_never_lowers(
    js: JetStreamContext, token: str, caplog: pytest.LogCaptureFixture
) -> None:
    await ensure_event_stream(js)
    ack = await publish(js, f"ws.evt.{token}.kept", b"{}")
    try:
        # Lower settings, set by hand (no service lowers them): the next start raises them.
        await js.update_stream(event_stream_config(duplicate_window=60.0, max_age=7 * 86400.0))
        changed = await ensure_event_stream(js)
        assert changed.config.duplicate_window == DEFAULT_DUPLICATE_WINDOW
        assert changed.config.max_age == DEFAULT_MAX_AGE
        # Updated in place: the messages are still there.
        assert changed.state.last_seq >= ack.seq
        kept = await js.get_last_msg(EVENT_STREAM, f"ws.evt.{token}.kept")
        assert kept.seq == ack.seq
        # A service started with a shorter window and retention lowers nothing, and says so.
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="natsbus.jetstream"):
            asked_less = await ensure_event_stream(js, duplicate_window=60.0, max_age=86400.0)
        assert asked_less.config.duplicate_window == DEFAULT_DUPLICATE_WINDOW
        assert asked_less.config.max_age == DEFAULT_MAX_AGE
        assert asked_less.created == changed.created
        said = {
            r.__dict__["field"]: tuple(r.__dict__[k] for k in ("current", "wanted", "chosen"))
            for r in caplog.records
        }
        assert said == {
            "max_age": (DEFAULT_MAX_AGE, 86400.0, DEFAULT_MAX_AGE),
            "duplicate_window": (DEFAULT_DUPLICATE_WINDOW, 60.0, DEFAULT_DUPLICATE_WINDOW),
        }
    finally:
        restored = await js.update_stream(event_stream_config())
    assert restored.config.duplicate_window == DEFAULT_DUPLICATE_WINDOW


async def test_a_repeated_message_id_is_stored_once(js: JetStreamContext, token: str) -> None:
    await ensure_event_stream(js)
    subject = f"ws.evt.{token}.created"
    first = await publish(js, subject, b'{"n":1}', msg_id=f"svc:{token}:1")
    again = await publish(js, subject, b'{"n":1}', msg_id=f"svc:{token}:1")
    other = await publish(js, subject, b'{"n":2}', msg_id=f"svc:{token}:2")
    assert first.stream == EVENT_STREAM
    assert not first.duplicate
    assert again.duplicate
    assert again.seq == first.seq
    assert other.seq > first.seq
    assert not other.duplicate
    info = await js.stream_info(EVENT_STREAM, subjects_filter=subject)
    assert info.state.subjects == {subject: 2}


async def test_publish_refuses_oversize_and_raises_for_no_stream(
    js: JetStreamContext, token: str
) -> None:
    await ensure_event_stream(js)
    subject = f"ws.evt.{token}.big"
    with pytest.raises(MessageTooLargeError, match=subject):
        await publish(js, subject, b"x" * MAX_MESSAGE_BYTES)
    info = await js.stream_info(EVENT_STREAM, subjects_filter=subject)
    assert not info.state.subjects
    # Outside the stream's subjects nothing stores it: an error, not a silent loss.
    with pytest.raises(nats.js.errors.NoStreamResponseError):
        await publish(js, f"ws.nowhere.{token}", b"{}", stream=None, timeout=1)
