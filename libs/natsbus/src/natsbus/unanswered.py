"""The replies a request gets when no service answered it, or its answer was bad.

:class:`natsbus.client.BusClient` never raises a NATS exception: a request that cannot be sent,
is not answered, or gets a malformed answer becomes an ``error`` reply built here. Its message
names the service that owns the subject (:func:`service_of`) and the next step, never the subject,
which goes in ``details``.
"""

from __future__ import annotations

import logging
from typing import Final

from contracts.base import ErrorReply
from contracts.errors import ErrorCode
from contracts.subjects import AGGREGATE_OWNERS, SERVICE_NAMES, SERVICES
from natsbus.errors import error_reply

__all__ = ["NOT_DELIVERED", "bad_reply", "service_of", "timed_out", "unavailable"]

logger = logging.getLogger("natsbus.client")  # the client logs it, as before the split


def service_of(subject: str) -> str | None:
    """The name of the service that answers ``subject`` (``workspace-realizer``), if known.

    ``ws.qry.<service>.<noun>`` names it; ``ws.cmd|qry.<aggregate>.*`` has the aggregate's owner.

    Args:
        subject: A command or query subject.

    Returns:
        The service's process name, or None for a subject no single service owns.
    """
    parts = subject.split(".")
    if len(parts) < 3 or parts[0] != "ws" or parts[1] not in ("cmd", "qry"):
        return None
    token = parts[2]
    owner = token if token in SERVICES else AGGREGATE_OWNERS.get(token)
    return SERVICE_NAMES[owner] if owner is not None else None  # type: ignore[index]


def _details(subject: str, service: str | None) -> dict[str, str]:
    details = {"subject": subject}
    if service is not None:
        details["service"] = service
    return details


NOT_DELIVERED: Final = "notDelivered"
"""``details`` key of a 503 whose request reached no handler (nothing serves the subject, or the
connection was down before it was sent): nothing was done, so sending it elsewhere or again is
safe."""


def unavailable(subject: str, what: str, *, delivered: bool | None = None) -> ErrorReply:
    """``service_unavailable`` (503): the service that owns ``subject`` ``what``;
    ``delivered=False`` when the request certainly reached no handler
    (:data:`NOT_DELIVERED` in its details)."""
    service = service_of(subject)
    who = service or "The service that handles this request"
    details: dict[str, object] = dict(_details(subject, service))
    if delivered is False:
        details[NOT_DELIVERED] = True
    return error_reply(
        ErrorCode.SERVICE_UNAVAILABLE,
        f"{who} {what}; check `clipyard status` and retry.",
        details=details,
    )


def bad_reply(subject: str, why: str) -> ErrorReply:
    """``internal`` with 502: the answer to a request on ``subject`` was unusable (``why``)."""
    logger.warning("bad reply from %s: %s", subject, why)
    # 502, not the catalogue's 500: the fault is in the answer, not here (an allowed status).
    return error_reply(ErrorCode.INTERNAL, f"bad reply from {subject}: {why}", status=502)


def timed_out(subject: str, timeout: float) -> ErrorReply:
    """``timeout`` (504): nothing answered a request on ``subject`` within ``timeout`` seconds."""
    service = service_of(subject)
    who = service or "The service that handles this request"
    return error_reply(
        ErrorCode.TIMEOUT,
        f"{who} did not answer within {timeout:g} s; the request may still complete. "
        "Check `clipyard status`, then look at the result before retrying.",
        details=_details(subject, service),
    )
