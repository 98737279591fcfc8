"""Every message round-trips, and every golden sample still decodes to the same message."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import msgspec
import pytest

from contracts import subjects
from contracts.base import Command, Event, Message, Query, Reply
from contracts.events import AnyEvent
from contracts.replies import AnyReply

_spec = importlib.util.spec_from_file_location("examples", Path(__file__).parent / "examples.py")
assert _spec
assert _spec.loader
examples: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(examples)


def _all_subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found.add(sub)
        found |= _all_subclasses(sub)
    return found


BASES = {Event, Command, Query}
TAGGED = sorted(
    (
        c
        for c in _all_subclasses(Message) - BASES
        # Only the contracts' own messages: tests elsewhere define throwaway ones.
        if c.__module__.startswith("contracts.") and isinstance(c.__struct_config__.tag, str)
    ),
    key=lambda c: c.__struct_config__.tag,
)


@pytest.mark.parametrize("message", examples.MESSAGES, ids=examples.tag_of)
def test_message_round_trips(message: Message) -> None:
    # Encoding then decoding as its own type gives the same message back.
    wire = msgspec.json.encode(message)
    assert msgspec.json.decode(wire, type=type(message)) == message


@pytest.mark.parametrize("message", examples.MESSAGES, ids=examples.tag_of)
def test_golden_sample_still_decodes(message: Message) -> None:
    # The sample written when the tag was introduced decodes to the example of today.
    path = examples.sample_path("message", examples.tag_of(message))
    assert path.exists(), f"no golden sample for {path.name}: run python {examples.__file__}"
    assert msgspec.json.decode(path.read_bytes(), type=type(message)) == message


@pytest.mark.parametrize("reply", examples.REPLIES, ids=examples.tag_of)
def test_reply_union_decodes_each_kind(reply: Reply) -> None:
    # The golden reply decodes through the one union, tagged `kind`.
    path = examples.sample_path("reply", examples.tag_of(reply))
    assert msgspec.json.decode(path.read_bytes(), type=AnyReply) == reply


def test_every_tagged_message_has_an_example() -> None:
    # A message without an example would have no golden sample guarding its wire shape.
    covered = {type(m) for m in examples.MESSAGES}
    missing = [c.__name__ for c in TAGGED if c not in covered]
    assert missing == []


def test_every_event_is_in_the_public_union_and_routable() -> None:
    # Each public event decodes through AnyEvent and has a subject its owner may publish.
    for message in examples.MESSAGES:
        if not isinstance(message, Event):
            continue
        decoded = msgspec.json.decode(msgspec.json.encode(message), type=AnyEvent)
        assert decoded == message
        aggregate = examples.tag_of(message).split(".")[0]
        owner = subjects.AGGREGATE_OWNERS.get(aggregate, "realizer")
        assert subjects.event_subject(examples.tag_of(message), owner).startswith("ws.evt.")


def test_wire_is_camel_case_with_type_tag() -> None:
    # Clients see camelCase fields and the versioned type first.
    wire = msgspec.json.decode(msgspec.json.encode(examples.MESSAGES[0]))
    assert wire["type"] == "company.created.v1"
    assert {"eventId", "aggregateId", "aggregateVersion", "companyId", "occurredAt"} <= set(wire)


def test_unknown_fields_are_tolerated_on_the_bus() -> None:
    # A newer producer may add fields; an older consumer still decodes (additive evolution).
    wire = msgspec.json.decode(msgspec.json.encode(examples.MESSAGES[0]))
    wire["addedLater"] = 1
    assert msgspec.json.decode(msgspec.json.encode(wire), type=AnyEvent) == examples.MESSAGES[0]


def test_tags_are_versioned_and_unique() -> None:
    tags = [c.__struct_config__.tag for c in TAGGED]
    assert len(tags) == len(set(tags))
    for cls in TAGGED:
        tag = cls.__struct_config__.tag
        assert tag.rsplit(".", 1)[-1].startswith("v"), tag
        assert issubclass(cls, Event | Command | Query)
