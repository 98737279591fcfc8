"""The bus-wide message size limit (ARCHITECTURE §2: no message over 512 KiB).

Every publish, request and reply goes through :func:`check_size` before anything is sent, so an
oversize message fails loudly at its sender with the subject and the size, instead of being cut
off or refused somewhere downstream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from contracts.errors import DEFAULT_STATUS, ErrorCode

__all__ = ["MAX_MESSAGE_BYTES", "MessageTooLargeError", "check_size", "message_size"]

MAX_MESSAGE_BYTES: Final = 512 * 1024
"""The largest message (payload plus header block) allowed on the bus, in bytes."""

_HEADER_LINE: Final = len(b"NATS/1.0\r\n")
_CRLF: Final = 2


class MessageTooLargeError(Exception):
    """A message is over :data:`MAX_MESSAGE_BYTES`; nothing was sent.

    It carries ``code``/``status``/``details`` so that the default error mapper of a bus service
    turns it into a ``message_too_large`` error reply.
    """

    code: Final = ErrorCode.MESSAGE_TOO_LARGE.value
    status: Final = DEFAULT_STATUS[ErrorCode.MESSAGE_TOO_LARGE]

    def __init__(self, subject: str, size: int, limit: int = MAX_MESSAGE_BYTES) -> None:
        self.subject = subject
        self.size = size
        self.limit = limit
        self.details = {"subject": subject, "size": size, "limit": limit}
        super().__init__(
            f"message on {subject!r} is {size} bytes, over the bus limit of {limit} bytes"
        )


def message_size(payload: bytes, headers: Mapping[str, str] | None = None) -> int:
    """The size NATS counts for a message: the payload plus the encoded header block.

    Args:
        payload: The message body.
        headers: The message headers, if any.

    Returns:
        The size in bytes.
    """
    if not headers:
        return len(payload)
    block = _HEADER_LINE + _CRLF
    for key, value in headers.items():
        block += len(key.encode()) + 2 + len(value.encode()) + _CRLF
    return len(payload) + block


def check_size(
    subject: str,
    payload: bytes,
    headers: Mapping[str, str] | None = None,
    *,
    limit: int = MAX_MESSAGE_BYTES,
) -> None:
    """Raise :class:`MessageTooLargeError` when a message would exceed the bus limit.

    Args:
        subject: Where the message would go (named in the error).
        payload: The message body.
        headers: The message headers, counted as NATS counts them.
        limit: The limit in bytes (the bus limit unless a test says otherwise).

    Raises:
        MessageTooLargeError: The message is over ``limit``.
    """
    size = message_size(payload, headers)
    if size > limit:
        raise MessageTooLargeError(subject, size, limit)
