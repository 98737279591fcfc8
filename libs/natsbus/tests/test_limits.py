"""The 512 KiB bus limit and its error."""

from __future__ import annotations

import pytest

from natsbus.errors import default_error_mapper
from natsbus.limits import MAX_MESSAGE_BYTES, MessageTooLargeError, check_size, message_size


def test_the_limit_is_512_kib() -> None:
    assert MAX_MESSAGE_BYTES == 524_288


def test_headers_count_as_nats_counts_them() -> None:
    # "NATS/1.0\r\n" + "k: v\r\n" + "\r\n" = 10 + 6 + 2 bytes.
    assert message_size(b"abc") == 3
    assert message_size(b"abc", {"k": "v"}) == 3 + 18
    assert message_size(b"abc", {}) == 3


def test_a_message_at_the_limit_passes() -> None:
    check_size("ws.cmd.x.y", b"x" * MAX_MESSAGE_BYTES)


def test_one_byte_over_names_subject_and_size() -> None:
    with pytest.raises(MessageTooLargeError) as caught:
        check_size("ws.cmd.x.y", b"x" * (MAX_MESSAGE_BYTES + 1))
    error = caught.value
    assert error.subject == "ws.cmd.x.y"
    assert error.size == MAX_MESSAGE_BYTES + 1
    assert "ws.cmd.x.y" in str(error)
    assert str(MAX_MESSAGE_BYTES + 1) in str(error)


def test_headers_can_push_a_message_over() -> None:
    payload = b"x" * (MAX_MESSAGE_BYTES - 10)
    check_size("s", payload)
    with pytest.raises(MessageTooLargeError):
        check_size("s", payload, {"traceparent": "00-" + "a" * 50})


def test_the_error_maps_to_message_too_large() -> None:
    reply = default_error_mapper(MessageTooLargeError("ws.cmd.x.y", 600_000))
    assert (reply.code, reply.status) == ("message_too_large", 413)
    assert reply.details == {"subject": "ws.cmd.x.y", "size": 600_000, "limit": MAX_MESSAGE_BYTES}
