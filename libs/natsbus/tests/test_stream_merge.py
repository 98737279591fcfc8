"""The stream merge: a service never lowers what the stream already has (each field's rule)."""

from __future__ import annotations

import dataclasses

import pytest
from nats.js.api import (
    DiscardPolicy,
    PersistMode,
    Placement,
    RePublish,
    RetentionPolicy,
    StorageType,
    StoreCompression,
    StreamConfig,
    StreamConsumerLimits,
    StreamSource,
    SubjectTransform,
)

from natsbus.jetstream import event_stream_config
from natsbus.stream_merge import StreamDifference, merge_stream_config

DAY = 86400.0


def as_server_reports(config: StreamConfig) -> StreamConfig:
    """``config`` as the server reports it back: its defaults and metadata filled in."""
    return dataclasses.replace(
        config,
        max_consumers=-1,
        max_msgs=-1,
        max_bytes=-1,
        allow_direct=False,
        mirror_direct=False,
        compression=StoreCompression.NONE,
        allow_msg_ttl=False,
        metadata={"_nats.level": "5", "_nats.req.level": "0", "_nats.ver": "2.15.1"},
        consumer_limits=StreamConsumerLimits(),
    )


def the(merge_differences: tuple[StreamDifference, ...], name: str) -> StreamDifference:
    (found,) = [d for d in merge_differences if d.field == name]
    return found


def test_the_same_configuration_gives_no_difference_and_no_update() -> None:
    wanted = event_stream_config(replicas=3)
    merge = merge_stream_config(as_server_reports(wanted), wanted)
    assert merge.differences == ()
    assert not merge.changed


def test_a_stream_at_r3_is_never_turned_back_into_r1() -> None:
    current = as_server_reports(event_stream_config(replicas=3, max_age=90 * DAY))
    merge = merge_stream_config(current, event_stream_config(replicas=1, max_age=7 * DAY))
    assert not merge.changed
    assert merge.config.num_replicas == 3
    assert merge.config.max_age == 90 * DAY
    replicas = the(merge.differences, "num_replicas")
    assert (replicas.current, replicas.wanted, replicas.chosen) == (3, 1, 3)
    assert replicas.winner == "current"
    assert not replicas.changes
    assert "never lowered" in replicas.reason
    retention = the(merge.differences, "max_age")
    assert (retention.current, retention.wanted, retention.chosen) == (90 * DAY, 7 * DAY, 90 * DAY)
    assert [d.field for d in merge.differences] == ["max_age", "num_replicas"]


def test_a_service_asking_more_replicas_raises_them() -> None:
    current = as_server_reports(event_stream_config(replicas=1))
    merge = merge_stream_config(current, event_stream_config(replicas=3))
    assert merge.changed
    assert merge.config.num_replicas == 3
    replicas = the(merge.differences, "num_replicas")
    assert (replicas.chosen, replicas.winner, replicas.changes) == (3, "wanted", True)
    # Everything else is the stream's own: the server's metadata and defaults stay.
    assert merge.config.metadata == current.metadata
    assert merge.config.compression == StoreCompression.NONE


@pytest.mark.parametrize(
    ("field", "current", "wanted", "chosen"),
    [
        ("max_age", 7 * DAY, 30 * DAY, 30 * DAY),
        ("max_age", 60 * DAY, 30 * DAY, 60 * DAY),
        ("max_age", 0.0, 30 * DAY, 0.0),  # 0: unlimited, the highest
        ("max_msgs", 1000, -1, -1),
        ("max_msgs", -1, 1000, -1),
        ("max_msgs", 5000, 1000, 5000),
        ("max_bytes", 1 << 20, 1 << 30, 1 << 30),
        ("max_bytes", -1, 1 << 30, -1),
        ("max_msg_size", 1024, 524288, 524288),
        ("max_msg_size", -1, 524288, -1),
        ("max_msgs_per_subject", 10, -1, -1),
        ("max_msgs_per_subject", 10, 5, 10),
        ("duplicate_window", 120.0, 600.0, 600.0),
        ("duplicate_window", 3600.0, 600.0, 3600.0),
        ("num_replicas", 5, 3, 5),
        ("num_replicas", None, 3, 3),  # unset: one replica
    ],
)
def test_limits_and_replicas_are_never_lowered(
    field: str, current: object, wanted: object, chosen: object
) -> None:
    merge = merge_stream_config(
        dataclasses.replace(event_stream_config(), **{field: current}),
        dataclasses.replace(event_stream_config(), **{field: wanted}),
    )
    (difference,) = merge.differences
    assert difference.field == field
    assert (difference.current, difference.wanted, difference.chosen) == (current, wanted, chosen)
    assert getattr(merge.config, field) == chosen
    assert merge.changed == (chosen != current)
    assert difference.winner == ("current" if chosen == current else "wanted")


def test_unlimited_spelled_zero_or_minus_one_is_no_difference() -> None:
    base = event_stream_config()
    merge = merge_stream_config(
        dataclasses.replace(base, max_msgs=0, max_bytes=-1, max_age=0.0),
        dataclasses.replace(base, max_msgs=-1, max_bytes=0, max_age=0.0),
    )
    assert merge.differences == ()


@pytest.mark.parametrize("field", ["deny_delete", "deny_purge"])
def test_a_protection_once_on_stays_on(field: str) -> None:
    base = event_stream_config()
    added = merge_stream_config(dataclasses.replace(base, **{field: False}), base)
    assert getattr(added.config, field) is True
    assert added.changed
    assert the(added.differences, field).winner == "wanted"
    kept = merge_stream_config(base, dataclasses.replace(base, **{field: False}))
    assert getattr(kept.config, field) is True
    assert not kept.changed
    assert the(kept.differences, field).winner == "current"


def test_roll_ups_are_turned_off_because_they_purge() -> None:
    base = event_stream_config()
    merge = merge_stream_config(dataclasses.replace(base, allow_rollup_hdrs=True), base)
    assert merge.config.allow_rollup_hdrs is False
    assert the(merge.differences, "allow_rollup_hdrs").winner == "wanted"


def test_subjects_are_the_union_in_the_streams_order() -> None:
    base = event_stream_config()
    merge = merge_stream_config(dataclasses.replace(base, subjects=["audit.>"]), base)
    assert merge.config.subjects == ["audit.>", "ws.evt.>"]
    difference = the(merge.differences, "subjects")
    assert (difference.winner, difference.chosen) == ("merged", ["audit.>", "ws.evt.>"])
    more = merge_stream_config(dataclasses.replace(base, subjects=["ws.evt.>", "audit.>"]), base)
    assert not more.changed
    assert the(more.differences, "subjects").winner == "current"
    reordered = merge_stream_config(
        dataclasses.replace(base, subjects=["b.>", "a.>"]),
        dataclasses.replace(base, subjects=["a.>", "b.>"]),
    )
    assert reordered.differences == ()


def test_limits_retention_wins_where_the_server_can_change_it() -> None:
    base = event_stream_config()
    interest = dataclasses.replace(base, retention=RetentionPolicy.INTEREST)
    merge = merge_stream_config(interest, base)
    assert merge.config.retention == RetentionPolicy.LIMITS
    difference = the(merge.differences, "retention")
    assert (difference.current, difference.wanted, difference.chosen) == (
        "interest",
        "limits",
        "limits",
    )
    assert "never see it" in difference.reason
    # A stream at limits retention keeps it, whatever a service asks.
    assert merge_stream_config(base, interest).config.retention == RetentionPolicy.LIMITS
    # JetStream cannot leave work-queue retention in place: kept, and the reason says so.
    queue = merge_stream_config(
        dataclasses.replace(base, retention=RetentionPolicy.WORK_QUEUE), base
    )
    assert queue.config.retention == RetentionPolicy.WORK_QUEUE
    assert not queue.changed
    assert "recreate the stream" in the(queue.differences, "retention").reason


def test_publishes_must_be_acknowledged() -> None:
    base = event_stream_config()
    merge = merge_stream_config(dataclasses.replace(base, no_ack=True), base)
    assert merge.config.no_ack is False
    assert merge.changed


@pytest.mark.parametrize(
    ("field", "current"),
    [("storage", StorageType.MEMORY), ("sealed", True)],
)
def test_what_jetstream_cannot_change_in_place_is_kept_and_said(
    field: str, current: object
) -> None:
    base = event_stream_config()
    merge = merge_stream_config(dataclasses.replace(base, **{field: current}), base)
    assert getattr(merge.config, field) == current
    assert not merge.changed
    difference = the(merge.differences, field)
    assert difference.winner == "current"
    assert "cannot change it in place" in difference.reason


@pytest.mark.parametrize(
    ("current", "wanted"),
    [(10, 100), (100, 10), (-1, 100), (10, -1)],
)
def test_max_consumers_is_kept_because_jetstream_cannot_change_it_in_place(
    current: int, wanted: int
) -> None:
    base = event_stream_config()
    merge = merge_stream_config(
        dataclasses.replace(base, max_consumers=current),
        dataclasses.replace(base, max_consumers=wanted),
    )
    assert merge.config.max_consumers == current
    assert not merge.changed  # an update would be refused, whichever is higher
    (difference,) = merge.differences
    assert (difference.field, difference.current, difference.wanted, difference.chosen) == (
        "max_consumers",
        current,
        wanted,
        current,
    )
    assert difference.winner == "current"
    assert "cannot change it in place" in difference.reason
    # Unlimited spelled 0 or -1 is still one value: no difference at all.
    same = merge_stream_config(
        dataclasses.replace(base, max_consumers=0), dataclasses.replace(base, max_consumers=-1)
    )
    assert same.differences == ()


def test_other_fields_keep_the_streams_value_unless_it_has_none() -> None:
    base = event_stream_config()
    current = dataclasses.replace(base, discard=DiscardPolicy.NEW, description="by hand")
    merge = merge_stream_config(current, base)
    assert merge.config.discard == DiscardPolicy.NEW
    assert merge.config.description == "by hand"
    assert not merge.changed
    assert {d.field: d.chosen for d in merge.differences} == {
        "description": "by hand",
        "discard": "new",
    }
    unnamed = merge_stream_config(dataclasses.replace(base, description=None), base)
    assert unnamed.config.description == base.description
    assert the(unnamed.differences, "description").winner == "wanted"


def test_what_the_service_leaves_unset_is_no_opinion() -> None:
    current = dataclasses.replace(
        as_server_reports(event_stream_config()),
        placement=Placement(cluster="east"),
        compression=StoreCompression.S2,
    )
    merge = merge_stream_config(current, event_stream_config())
    assert merge.differences == ()
    assert merge.config.placement == Placement(cluster="east")


_OTHER: dict[str, object] = {
    "name": "WS_EVENTS",
    "description": "another",
    "subjects": ["other.>"],
    "retention": RetentionPolicy.INTEREST,
    "discard": DiscardPolicy.NEW,
    "storage": StorageType.MEMORY,
    "template_owner": "T",
    "placement": Placement(cluster="c"),
    "mirror": StreamSource(name="M"),
    "sources": [StreamSource(name="S")],
    "republish": RePublish(src=">", dest="re.>"),
    "subject_transform": SubjectTransform(src=">", dest="t.>"),
    "compression": StoreCompression.S2,
    "persist_mode": PersistMode.ASYNC,
    "metadata": {"owner": "ops"},
    "consumer_limits": StreamConsumerLimits(inactive_threshold=5.0, max_ack_pending=7),
}
"""A value for each field that a plain bool, int or float change cannot produce."""


def _other(field: dataclasses.Field[object], value: object) -> object:
    if field.name in _OTHER:
        return _OTHER[field.name]
    if isinstance(value, bool) or "bool" in str(field.type):
        return not value
    if isinstance(value, int | float) or "int" in str(field.type) or "float" in str(field.type):
        return 7 if value is None else value + 7  # type: ignore[operator]
    pytest.fail(f"StreamConfig.{field.name} ({field.type}) has no test value: add one to _OTHER")


def test_every_field_of_stream_config_is_compared() -> None:
    stream = dataclasses.replace(as_server_reports(event_stream_config()), first_seq=1)
    wanted = StreamConfig(
        **{f.name: _other(f, getattr(stream, f.name)) for f in dataclasses.fields(StreamConfig)}
    )
    merge = merge_stream_config(stream, wanted)
    compared = {d.field for d in merge.differences}
    assert compared == {f.name for f in dataclasses.fields(StreamConfig)} - {"name"}
    for difference in merge.differences:
        assert difference.current != difference.wanted, difference
        assert difference.reason
