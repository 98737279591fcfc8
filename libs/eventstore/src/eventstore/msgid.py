"""The message id of a published event: ``Nats-Msg-Id: <service>:<notification id>``.

The outbox relay writes it; inboxes read it to know the upstream position, and the relay reads it
back from the stream at start. One parser for both, strict about what a notification id is: ASCII
digits only (``str.isdigit`` accepts ``"²"``, which ``int`` then refuses), at least 1.
"""

from __future__ import annotations

__all__ = ["format_msg_id", "parse_msg_id", "parse_notification_id"]


def format_msg_id(service: str, notification_id: int) -> str:
    """The ``Nats-Msg-Id`` of ``service``'s notification ``notification_id``.

    Args:
        service: The publishing service's token.
        notification_id: The notification id in its store.

    Returns:
        ``<service>:<notification id>``.
    """
    return f"{service}:{notification_id}"


def parse_notification_id(text: str | None) -> int | None:
    """A notification id written as ASCII digits, or None.

    Args:
        text: The text to read (a header value).

    Returns:
        The positive id, or None when ``text`` is missing, not plain ASCII digits, or 0.
    """
    if not text or not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if value >= 1 else None


def parse_msg_id(msg_id: str | None, upstream: str) -> int | None:
    """The notification id in ``<upstream>:<id>``, or None when it is missing or not upstream's.

    Args:
        msg_id: The ``Nats-Msg-Id`` header.
        upstream: The expected publishing service.

    Returns:
        The positive notification id, or None.
    """
    prefix, _, number = (msg_id or "").partition(":")
    if prefix != upstream:
        return None
    return parse_notification_id(number)
