"""Message ids in both directions, and the public form of an inbox rejection."""

from __future__ import annotations

from uuid import uuid5

from contracts.base import Actor
from contracts.service import InboxMessageRejected
from contracts.subjects import event_subject
from eventstore import (
    EVENT_ID_NAMESPACE,
    Cause,
    InboxRejections,
    acting,
    envelope,
    msgid,
    parse_msg_id,
    parse_notification_id,
    rejection_to_contract,
    rejections_id,
    streamcheck,
)
from eventstore import inbox as inbox_module
from eventstore.streamcheck import published_notification_id


def test_inbox_reads_only_its_upstreams_positive_ids() -> None:
    assert parse_msg_id("gateway:17", "gateway") == 17
    for bad in (
        None,
        "",
        "gateway",
        "gateway:",
        "gateway:0",
        "gateway:-3",
        "gateway:x",
        "realizer:5",
        "gateway:\u00b2",  # superscript two: str.isdigit() says yes, int() refuses
        "gateway:\u0663",  # Arabic-Indic three: int() would read it, but no relay writes it
        "gateway: 7",
    ):
        assert parse_msg_id(bad, "gateway") is None
    assert parse_notification_id("12") == 12
    assert parse_notification_id("\u00b9\u00b2") is None


def test_relay_recognises_its_own_messages_in_the_stream() -> None:
    assert published_notification_id({"Nats-Msg-Id": "gateway:8"}, "gateway") == 8
    both = {"Nats-Msg-Id": "gateway:8", "Clipyard-Notification-Id": "8"}
    assert published_notification_id(both, "gateway") == 8
    assert published_notification_id({"Nats-Msg-Id": "realizer:8"}, "gateway") is None
    assert published_notification_id({}, "gateway") is None
    assert published_notification_id(None, "gateway") is None
    # A message the relay did not write (or a corrupted one) is not mistaken for one, nor a crash.
    assert published_notification_id({"Nats-Msg-Id": "gateway:\u00b2"}, "gateway") is None
    odd = {"Nats-Msg-Id": "gateway:8", "Clipyard-Notification-Id": "\u00b2"}
    assert published_notification_id(odd, "gateway") is None


def test_inbox_and_stream_check_share_one_parser() -> None:
    assert inbox_module.parse_msg_id is msgid.parse_msg_id
    assert vars(streamcheck)["parse_msg_id"] is msgid.parse_msg_id


def test_a_rejection_becomes_a_public_event_of_the_rejecting_service() -> None:
    rejections = InboxRejections(upstream="gateway")
    assert rejections.id == rejections_id("gateway") != rejections_id("controller")
    with acting(Cause(actor=Actor(type="system", id="workspace-realizer"), reason="poison")):
        rejections.reject(
            upstream="gateway", subject="ws.evt.company.created", stream_sequence=4, error="bad"
        )
    opened, rejected = rejections.pending_events
    assert rejection_to_contract(opened, "workspace-realizer") is None
    contract = rejection_to_contract(rejected, "workspace-realizer")
    assert isinstance(contract, InboxMessageRejected)
    assert (contract.aggregate, contract.aggregate_id, contract.aggregate_version) == (
        "inbox",
        str(rejections.id),
        2,
    )
    assert (contract.upstream, contract.stream_sequence, contract.error) == ("gateway", 4, "bad")
    assert contract.actor == Actor(type="system", id="workspace-realizer")
    assert contract.reason == "poison"
    assert rejection_to_contract(rejected, "x").event_id == contract.event_id  # type: ignore[union-attr]
    # The same envelope as every other published event (one builder, one id namespace).
    assert contract.event_id == str(uuid5(EVENT_ID_NAMESPACE, f"{rejections.id}:2"))
    fields = envelope(rejected, aggregate="inbox", company_id=None, service="workspace-realizer")
    assert {k: getattr(contract, k) for k in fields} == fields
    assert event_subject("inbox.message_rejected.v1", "realizer") == (
        "ws.evt.inbox.message_rejected.realizer"
    )
