"""How a service's wanted stream configuration meets the one a stream already has.

:func:`merge_stream_config` is pure: given the stream's current :class:`StreamConfig` and the
one a service wants, it returns the configuration to apply and every field that differs, with
the value chosen and why. The rule: a running service never lowers what another service or an
operator set higher.

- Replicas and limits (``num_replicas``, ``max_age``, ``max_msgs``, ``max_bytes``,
  ``max_msg_size``, ``max_msgs_per_subject``, ``duplicate_window``): the higher one wins; an
  unlimited value (0 or -1) is the highest.
- Protections: ``deny_delete`` and ``deny_purge`` true wins; ``allow_rollup_hdrs`` false wins
  (a roll-up purges, which the server refuses together with ``deny_purge``).
- ``subjects``: the union (the service needs its own; others' stay).
- What the system needs, where the other value would break it: ``retention`` limits wins
  (under interest or work-queue retention an event is removed once consumed, so a consumer
  created later, such as a new inbox or a replay, would never see it), except that JetStream
  cannot change work-queue retention in place (the current value stays, and the log says to
  recreate the stream); ``no_ack`` false wins (the outbox relay waits for every publish's ack).
- ``storage``, ``sealed`` and ``max_consumers``: JetStream cannot change them in place; the
  current value stays.
- Every other field of :class:`StreamConfig` (``discard``, ``placement``, ``compression``,
  ``metadata``, ...): the current value stays, unless the stream has none (then the wanted one).

A field the wanted configuration leaves as None is no opinion: never a difference.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from nats.js.api import Base, RetentionPolicy, StreamConfig

__all__ = ["StreamDifference", "StreamMerge", "merge_stream_config"]

Winner = Literal["current", "wanted", "merged"]


@dataclass(frozen=True)
class StreamDifference:
    """One field on which the stream and the service differ, and the value kept."""

    field: str
    current: object
    """The stream's value (plain: enums as their value, nested configs as dicts)."""
    wanted: object
    """The service's value."""
    chosen: object
    """The value the stream has after the merge."""
    winner: Winner
    """Whose value was kept: ``current``, ``wanted``, or ``merged`` (a union of both)."""
    reason: str
    """Why, in words for the log."""

    @property
    def changes(self) -> bool:
        """True when the stream must be updated for this field."""
        return _plain(self.chosen) != _plain(self.current)


@dataclass(frozen=True)
class StreamMerge:
    """The configuration to apply and every difference found."""

    config: StreamConfig
    """The current configuration with the chosen values (apply it only when :attr:`changed`)."""
    differences: tuple[StreamDifference, ...]

    @property
    def changed(self) -> bool:
        """True when the stream must be updated."""
        return any(difference.changes for difference in self.differences)


_Rule = Callable[[object, object], tuple[object, Winner, str]]

_UNLIMITED_WHEN_NOT_POSITIVE: Final = (
    "max_age",
    "max_msgs",
    "max_bytes",
    "max_msg_size",
    "max_msgs_per_subject",
    "max_consumers",
)
"""Limits where 0 or -1 means unlimited (two spellings of one value: never a difference)."""

_HIGHER_LIMIT_WINS: Final = tuple(f for f in _UNLIMITED_WHEN_NOT_POSITIVE if f != "max_consumers")
"""The limits a service may raise; ``max_consumers`` JetStream cannot change in place."""


def _plain(value: object) -> object:
    """A comparable, loggable form: enums by value, seconds to the millisecond, nested dicts."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, Base):
        return {k: _plain(v) for k, v in value.as_dict().items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _looseness(value: object) -> float:
    """A limit's size, where 0, -1 and None (unlimited) are the largest."""
    number = _number(value)
    return float("inf") if number <= 0 else number


def _higher_limit(current: object, wanted: object) -> tuple[object, Winner, str]:
    """Limits where 0, -1 or None mean unlimited: the looser one wins."""
    if _looseness(wanted) > _looseness(current):
        return wanted, "wanted", "the higher limit wins (unlimited is highest)"
    return current, "current", "never lowered (the higher limit wins)"


def _higher(current: object, wanted: object) -> tuple[object, Winner, str]:
    """Replicas and the de-duplication window: the higher one wins."""
    if _number(wanted) > _number(current):
        return wanted, "wanted", "the higher value wins"
    return current, "current", "never lowered (the higher value wins)"


def _true_wins(current: object, wanted: object) -> tuple[object, Winner, str]:
    if wanted and not current:
        return True, "wanted", "a protection, once on, stays on"
    return current, "current", "a protection, once on, stays on"


def _false_wins(current: object, wanted: object) -> tuple[object, Winner, str]:
    if current and not wanted:
        return False, "wanted", "a roll-up purges events, which deny_purge forbids"
    return current, "current", "a roll-up purges events, which deny_purge forbids"


def _union(current: object, wanted: object) -> tuple[object, Winner, str]:
    have = list(current) if isinstance(current, list) else []
    added = [s for s in (wanted if isinstance(wanted, list) else []) if s not in have]
    if not added:
        return current, "current", "the stream already stores what the service needs"
    return [*have, *added], "merged", "the union (every service's subjects stay)"


def _retention(current: object, wanted: object) -> tuple[object, Winner, str]:
    """Limits retention wins; JetStream refuses any change to or from work-queue retention."""
    limits, work_queue = RetentionPolicy.LIMITS.value, RetentionPolicy.WORK_QUEUE.value
    if _plain(current) == limits:
        return current, "current", "limits retention keeps every event until it expires"
    if _plain(wanted) != limits:
        return current, "current", "not the service's to change; the stream's stays"
    if _plain(current) == work_queue:
        why = (
            "limits retention is needed, but JetStream cannot change work-queue retention in "
            "place: recreate the stream, or consumers miss consumed events"
        )
        return current, "current", why
    why = (
        "limits retention is needed; under another policy an event is removed once consumed, "
        "so a later consumer (a new inbox, a replay) would never see it"
    )
    return wanted, "wanted", why


def _no_ack(current: object, wanted: object) -> tuple[object, Winner, str]:
    if current and not wanted:
        return False, "wanted", "the outbox relay waits for every publish's ack"
    return current, "current", "publishes are acknowledged"


def _unchangeable(current: object, wanted: object) -> tuple[object, Winner, str]:
    return current, "current", "JetStream cannot change it in place; recreate the stream"


def _keep(current: object, wanted: object) -> tuple[object, Winner, str]:
    if current is None or current in ("", [], {}):
        return wanted, "wanted", "the stream has none; the service's value is set"
    return current, "current", "not the service's to change; the stream's value stays"


_RULES: Final[dict[str, _Rule]] = {
    **dict.fromkeys(_HIGHER_LIMIT_WINS, _higher_limit),
    "num_replicas": _higher,
    "duplicate_window": _higher,
    "deny_delete": _true_wins,
    "deny_purge": _true_wins,
    "allow_rollup_hdrs": _false_wins,
    "subjects": _union,
    "retention": _retention,
    "no_ack": _no_ack,
    "storage": _unchangeable,
    "sealed": _unchangeable,
    "max_consumers": _unchangeable,
}
"""The fields reasoned about; every other one follows :func:`_keep`."""


def _subject_set(value: object) -> set[str]:
    return {str(subject) for subject in value} if isinstance(value, list) else set()


def _same(name: str, current: object, wanted: object) -> bool:
    if name == "subjects":
        return _subject_set(current) == _subject_set(wanted)
    if name == "num_replicas":
        return (current or 1) == (wanted or 1)
    if name in _UNLIMITED_WHEN_NOT_POSITIVE:
        return _looseness(current) == _looseness(wanted)
    return _plain(current) == _plain(wanted)


def merge_stream_config(current: StreamConfig, wanted: StreamConfig) -> StreamMerge:
    """Merge a service's wanted configuration into a stream's current one (never lowering).

    Args:
        current: The stream's configuration, as the server reports it.
        wanted: The configuration the service would create the stream with.

    Returns:
        The configuration to apply (the current one with the chosen values) and every field that
        differs, in :class:`StreamConfig`'s field order; nothing when they agree.
    """
    chosen: dict[str, object] = {}
    differences: list[StreamDifference] = []
    for spec in dataclasses.fields(StreamConfig):
        name = spec.name
        have, want = getattr(current, name), getattr(wanted, name)
        if name == "name" or want is None or _same(name, have, want):
            continue
        value, winner, reason = _RULES.get(name, _keep)(have, want)
        differences.append(
            StreamDifference(
                field=name,
                current=_plain(have),
                wanted=_plain(want),
                chosen=_plain(value),
                winner=winner,
                reason=reason,
            )
        )
        chosen[name] = value
    config = copy.deepcopy(current)  # the caller's object stays as it was
    for difference in differences:
        if difference.changes:
            setattr(config, difference.field, chosen[difference.field])
    return StreamMerge(config=config, differences=tuple(differences))
