"""How the workspace timeline reads an event that has more to say than its type.

Egress events (``egress.observed.v1``, ``egress.tallied.v1``; contracts ``egress_events``) are
what a workspace's processes reached, or were kept from, outside their network namespace: the
page shows them as one line an operator reads at a glance (``DNS lookup of example.com denied``,
``Connection to registry.npmjs.org:443 allowed``, then how many times: :data:`TIMES` and the
count), a denial marked as failures are. An event's ``data`` holds the stored event's fields in
snake_case (``host``, ``port``, ``verdict``, ``count``, ``first_at``, ``last_at``); the camelCase
spelling is read too. An event whose data does not read as egress keeps the generic rendering.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from contracts.execution_views import WorkspaceEventRow

__all__ = ["DNS_PORT", "EGRESS_TYPES", "TIMES", "Egress", "egress_of"]

EGRESS_TYPES: Final = frozenset({"egress.observed.v1", "egress.tallied.v1"})
"""The event types of a workspace's egress."""
DNS_PORT: Final = 53
"""Port 53 is a DNS query for ``host`` (the gate answers them itself)."""
_VERDICTS: Final = frozenset({"allowed", "denied"})
TIMES: Final = "\N{MULTIPLICATION SIGN}"
"""The sign before a count: the multiplication sign, read "times"."""


@dataclass(frozen=True)
class Egress:
    """One egress event as the timeline shows it."""

    host: str
    port: int
    verdict: str
    """``allowed`` or ``denied``."""
    count: int | None
    """How many connections (or lookups); None when the event does not say."""
    final: bool
    """``egress.tallied.v1``: the count of the whole period (else the count so far)."""
    first_at: datetime | None = None
    last_at: datetime | None = None

    @property
    def denied(self) -> bool:
        """Whether the gate kept the workspace from it."""
        return self.verdict == "denied"

    @property
    def dns(self) -> bool:
        """Whether it was a DNS lookup (port 53)."""
        return self.port == DNS_PORT

    @property
    def target(self) -> str:
        """What was reached: ``DNS lookup of example.com``, ``Connection to example.com:443``."""
        if self.dns:
            return f"DNS lookup of {self.host}"
        return f"Connection to {self.host}:{self.port}"

    @property
    def times(self) -> str:
        """How many times: :data:`TIMES` and the count, then `` in all`` once the period ended
        (empty when the event does not say)."""
        if self.count is None:
            return ""
        return f"{TIMES}{self.count} in all" if self.final else f"{TIMES}{self.count}"

    @property
    def headline(self) -> str:
        """The whole line as text: :attr:`target`, the verdict, :attr:`times`."""
        return f"{self.target} {self.verdict} {self.times}".rstrip()


def _field(data: Mapping[str, Any], name: str) -> Any:
    """``data[name]`` in snake_case, else in camelCase (None when neither)."""
    if name in data:
        return data[name]
    head, *rest = name.split("_")
    return data.get(head + "".join(part.title() for part in rest))


def _moment(value: Any) -> datetime | None:
    """A timestamp of the data (a datetime, or ISO 8601 text after JSON); None if neither."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return None
    return None


def _whole(value: Any) -> int | None:
    """An integer of the data (a bool is not one)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def egress_of(event: WorkspaceEventRow) -> Egress | None:
    """The egress ``event`` reports, or None when it is another event (or its data does not
    read as egress: it is then shown as any other event)."""
    if event.type not in EGRESS_TYPES:
        return None
    data = event.data
    host, verdict = _field(data, "host"), _field(data, "verdict")
    port, count = _whole(_field(data, "port")), _whole(_field(data, "count"))
    if not isinstance(host, str) or not host or verdict not in _VERDICTS or port is None:
        return None
    return Egress(
        host=host,
        port=port,
        verdict=verdict,
        count=count,
        final=event.type == "egress.tallied.v1",
        first_at=_moment(_field(data, "first_at")),
        last_at=_moment(_field(data, "last_at")),
    )
