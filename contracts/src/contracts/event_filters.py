"""The one event filter of the CLI (``events tail --type``), the event stream (SSE ``?types=``)
and a workspace's events (``GET /api/execution-workspaces/{id}/events?types=``).

A filter is a comma list (or several values) of any of:

- a type: ``workspace.realized.v1`` (that type only);
- a type without its version: ``workspace.realized`` (every version of it);
- an aggregate, the first part of a type: ``workspace``, ``run`` (every ``run.*`` type; the
  events of one stored aggregate may be published under several, e.g. a workspace's runtime
  under ``runtime_provisioning`` and ``runtime_service``).

Each value must name something of the vocabulary the filter is checked against
(:data:`~contracts.event_types.PUBLIC_EVENT_TYPES` where only published events pass, the event
stream; :data:`~contracts.event_types.KNOWN_EVENT_TYPES` for audit trails): anything else raises
:class:`UnknownEventFilterError`, whose message says what is accepted (and, for a stored class
name such as ``Provisioned``, which type it is now).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Final

from contracts.errors import DetailedError, ErrorCode
from contracts.event_types import (
    KNOWN_EVENT_TYPES,
    aggregate_of,
    snake_case,
    unversioned,
)

__all__ = ["EventFilter", "UnknownEventFilterError", "filter_values", "parse_event_filter"]

_SHAPE: Final = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+(\.v[0-9]+)?)?")
"""``aggregate``, ``aggregate.event`` or ``aggregate.event.vN``: lowercase tokens only, so a
value that passes is also a valid NATS subject token sequence."""


class UnknownEventFilterError(DetailedError, ValueError):
    """A filter value names no event type of the vocabulary; the message lists what is accepted
    (``validation_failed``; ``details``: the ``field`` and the ``unknown`` values)."""

    code = ErrorCode.VALIDATION_FAILED

    def __init__(self, message: str, *, field: str, unknown: tuple[str, ...]) -> None:
        super().__init__(message, field=field, unknown=list(unknown))
        self.field = field
        self.unknown = unknown


@dataclass(frozen=True)
class EventFilter:
    """Which event types pass: exact types, types without version, whole aggregates."""

    values: tuple[str, ...]
    """The values as given (checked, without duplicates), in their order."""

    def matches(self, type_tag: str) -> bool:
        """Whether an event of type ``type_tag`` passes (a type this vocabulary does not know
        yet passes when its aggregate or its unversioned name is asked for)."""
        aggregate, name = aggregate_of(type_tag), unversioned(type_tag)
        return any(value in (type_tag, name, aggregate) for value in self.values)

    def __str__(self) -> str:
        return ",".join(self.values)


def filter_values(raw: str | Iterable[str] | None) -> tuple[str, ...]:
    """The values of comma lists (``"run,workspace.realized"``), stripped, without empty ones
    or duplicates."""
    if raw is None:
        return ()
    given = [raw] if isinstance(raw, str) else list(raw)
    found = (one.strip() for item in given for one in item.split(","))
    return tuple(dict.fromkeys(one for one in found if one))


def parse_event_filter(
    raw: str | Iterable[str] | None,
    vocabulary: Collection[str] = KNOWN_EVENT_TYPES,
    *,
    name: str = "types",
) -> EventFilter | None:
    """The filter a client gave (None when it gave none: every event passes).

    Args:
        raw: A comma list, or several (``?types=run&types=workspace``).
        vocabulary: The types the filter may name.
        name: What the filter is called where it was given (``types``, ``--type``), for the
            message.

    Raises:
        UnknownEventFilterError: A value is malformed or names nothing of ``vocabulary``.
    """
    values = filter_values(raw)
    if not values:
        return None
    types = frozenset(vocabulary)
    accepted = types | {unversioned(t) for t in types} | {aggregate_of(t) for t in types}
    unknown = tuple(v for v in values if not _SHAPE.fullmatch(v) or v not in accepted)
    if unknown:
        raise UnknownEventFilterError(
            _message(name, unknown, types, accepted), field=name, unknown=unknown
        )
    return EventFilter(values)


def _hint(value: str, accepted: frozenset[str]) -> str:
    """What an unknown value probably meant: the same in lower snake case (``Run`` → ``run``),
    else the types whose event is called so (``Provisioned`` → ``workspace.provisioned``, which
    the event stream never carries); empty when nothing comes close."""
    wanted = ".".join(snake_case(part) for part in value.strip().split("."))
    if wanted in accepted:
        return f" (did you mean {wanted}?)"
    event = unversioned(wanted).rpartition(".")[2]
    named = sorted(
        {unversioned(t) for t in KNOWN_EVENT_TYPES if unversioned(t).endswith(f".{event}")}
    )
    here = [n for n in named if n in accepted]
    if here:
        return f" (did you mean {' or '.join(here[:3])}?)"
    if named:
        return f" ({' and '.join(named[:3])}: recorded in audit trails only, never published)"
    return ""


def _message(
    name: str, unknown: tuple[str, ...], types: frozenset[str], accepted: frozenset[str]
) -> str:
    what = "; ".join(f"{v!r}{_hint(v, accepted)}" for v in unknown)
    aggregates = ", ".join(sorted({aggregate_of(t) for t in types}))
    return (
        f"Unknown event filter in {name}: {what}. Give event types (workspace.realized.v1), "
        f"types without their version (workspace.realized) or aggregates, comma separated; the "
        f"aggregates are {aggregates}."
    )
