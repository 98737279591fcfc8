"""Message ids in both directions, and the public form of an inbox rejection."""

from __future__ import annotations

from contracts.base import Actor
from contracts.service import InboxMessageRejected
from contracts.subjects import event_subject
from eventstore import (
    Cause,
    InboxRejections,
    acting,
    parse_msg_id,
    rejection_to_contract,
    rejections_id,
)
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
    ):
        assert parse_msg_id(bad, "gateway") is None


def test_relay_recognises_its_own_messages_in_the_stream() -> None:
    assert published_notification_id({"Nats-Msg-Id": "gateway:8"}, "gateway") == 8
    both = {"Nats-Msg-Id": "gateway:8", "Clipyard-Notification-Id": "8"}
    assert published_notification_id(both, "gateway") == 8
    assert published_notification_id({"Nats-Msg-Id": "realizer:8"}, "gateway") is None
    assert published_notification_id({}, "gateway") is None
    assert published_notification_id(None, "gateway") is None


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
    assert event_subject("inbox.message_rejected.v1", "realizer") == (
        "ws.evt.inbox.message_rejected.realizer"
    )
