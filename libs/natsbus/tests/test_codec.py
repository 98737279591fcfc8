"""The shared encoder and the cached per-type decoders."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from contracts.base import Accepted, Actor, ErrorReply, Ok, Struct
from natsbus.codec import decode, decode_reply, decoder, encode


class Sample(Struct, frozen=True, kw_only=True):
    name: str
    count: int = 0
    at: datetime | None = None


def test_a_decoder_is_built_once_per_type() -> None:
    # The same type gives the very same decoder object; another type another one.
    assert decoder(Sample) is decoder(Sample)
    assert decoder(Sample) is not decoder(Actor)
    assert decoder(Ok | ErrorReply | Accepted) is decoder(Ok | ErrorReply | Accepted)


def test_structs_round_trip_camel_case() -> None:
    at = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
    data = encode(Sample(name="x", count=3, at=at))
    # camelCase on the wire comes from the contracts base; values survive the trip.
    assert b'"name":"x"' in data
    assert decode(data, Sample) == Sample(name="x", count=3, at=at)


def test_decode_names_the_bad_field() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"\$\.count"):
        decode(b'{"name":"x","count":"three"}', Sample)
    with pytest.raises(msgspec.DecodeError):
        decode(b"not json", Sample)


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (Ok(result={"a": 1}), "ok"),
        (ErrorReply(code="not_found", message="gone", status=404, details={"id": "7"}), "error"),
        (Accepted(operation_id="op-1"), "accepted"),
    ],
)
def test_replies_round_trip_tagged_kind(reply: Ok | ErrorReply | Accepted, kind: str) -> None:
    data = encode(reply)
    assert msgspec.json.decode(data)["kind"] == kind
    assert decode_reply(data) == reply


def test_a_reply_without_a_known_kind_is_refused() -> None:
    with pytest.raises(msgspec.ValidationError, match="kind"):
        decode_reply(b'{"kind":"maybe"}')
