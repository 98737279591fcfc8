"""What a handler knows about the request it serves: subject, headers and deadline."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "DEADLINE_HEADER",
    "DEFAULT_REQUEST_TIMEOUT",
    "HELD_HEADER",
    "INSTANCE_STARTED_HEADER",
    "PROBE_HEADER",
    "REPLY_PREFIX",
    "REQUEST_ID_HEADER",
    "RequestContext",
    "deadline_header",
    "epoch_ms",
    "parse_deadline",
]

REPLY_PREFIX: Final = "_INBOX"
"""Replies go only to reply inboxes (``_INBOX.…`` or a user's ``_INBOX_<user>.…``)."""

DEADLINE_HEADER: Final = "Clipyard-Deadline"
"""The request's absolute deadline, in epoch milliseconds (ARCHITECTURE §2)."""

PROBE_HEADER: Final = "Clipyard-Probe"
"""A request carrying it is not handled: any live instance of the endpoint answers it at once
(an empty body), so a requester can tell whether anyone still serves a subject. Its value is the
:data:`REQUEST_ID_HEADER` of the request the requester waits for; the answer says in
:data:`HELD_HEADER` whether the answering instance is handling that request, and in
:data:`INSTANCE_STARTED_HEADER` when that instance started."""

REQUEST_ID_HEADER: Final = "Clipyard-Request-Id"
"""A request's own id, so that a probe can ask about it."""

HELD_HEADER: Final = "Clipyard-Held"
"""In a probe's answer: ``1`` when the instance is handling the probed request, else ``0``."""

INSTANCE_STARTED_HEADER: Final = "Clipyard-Instance-Started"
"""In a probe's answer: when the answering instance started, in epoch milliseconds. With one
instance per subject, one that started after a request was sent and does not hold it is a restart
that never received it: the request was lost with the instance that had it (unless its answer is
already on the way: the requester looks again before it concludes). With several instances a probe
can reach another one than the holder, and one started meanwhile would make a live request look
lost: the replicated control plane must ask every instance instead."""

DEFAULT_REQUEST_TIMEOUT: Final = 110.0
"""Seconds a request may take by default: below the gateway's 120 s (ARCHITECTURE §2)."""


def epoch_ms(at: float) -> int:
    """``at`` (epoch seconds) in whole epoch milliseconds, as the headers carry times."""
    return math.floor(at * 1000)


def deadline_header(deadline: float) -> str:
    """The header value for an absolute deadline.

    Args:
        deadline: The deadline in epoch seconds.

    Returns:
        Whole epoch milliseconds, as text.
    """
    return str(epoch_ms(deadline))


def parse_deadline(headers: Mapping[str, str] | None, *, received_at: float) -> float:
    """The deadline of a request, from its ``Clipyard-Deadline`` header.

    A request without the header (or with a malformed one) gets the default request timeout,
    counted from when it was received.

    Args:
        headers: The request headers, if any.
        received_at: When the request arrived, in epoch seconds.

    Returns:
        The deadline in epoch seconds.
    """
    raw = (headers or {}).get(DEADLINE_HEADER)
    if raw is not None:
        try:
            millis = int(raw.strip())
        except ValueError:
            millis = -1
        if millis > 0:
            return millis / 1000
    return received_at + DEFAULT_REQUEST_TIMEOUT


@dataclass(frozen=True, slots=True)
class RequestContext:
    """The request a handler serves, beside its decoded body.

    Attributes:
        subject: The subject the request arrived on.
        headers: The request headers (trace context included; handlers need not look at it).
        deadline: When the requester stops waiting, in epoch seconds.
    """

    subject: str
    headers: Mapping[str, str] = field(default_factory=dict)
    deadline: float = field(default_factory=lambda: time.time() + DEFAULT_REQUEST_TIMEOUT)

    @classmethod
    def from_message(cls, subject: str, headers: Mapping[str, str] | None) -> RequestContext:
        """Build the context of a request that has just arrived.

        Args:
            subject: The subject it arrived on.
            headers: Its headers, if any.

        Returns:
            The context, with the deadline parsed from the headers.
        """
        return cls(
            subject=subject,
            headers=dict(headers or {}),
            deadline=parse_deadline(headers, received_at=time.time()),
        )

    def remaining(self) -> float:
        """Seconds left before the deadline; 0.0 once it has passed."""
        return max(0.0, self.deadline - time.time())

    def expired(self) -> bool:
        """Whether the requester has already stopped waiting."""
        return self.remaining() <= 0.0
