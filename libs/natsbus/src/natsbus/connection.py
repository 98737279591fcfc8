"""Connecting to NATS: retry the first connection for a while, then reconnect forever.

A service may start before its NATS server answers (``just up`` starts them side by side), so the
first connection is retried until ``initial_wait`` passes. Once connected, the client never gives
up reconnecting: a NATS restart must not take the services down with it.

Each NATS user gets private reply inboxes: a client logged in as ``realizer`` receives its replies
(requests, JetStream API answers, publish acks, pull-consumer deliveries) on ``_INBOX_realizer.>``,
the only inbox subjects ``deploy/nats/nats.conf`` lets that user subscribe to, so no other user can
read its replies.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from typing import Final

from nats import errors as nats_errors
from nats.aio.client import Client

from natsbus.urls import parse_nats_urls

__all__ = ["DEFAULT_INBOX_PREFIX", "NatsConnectError", "connect", "inbox_prefix_for", "redact_url"]

logger = logging.getLogger(__name__)

DEFAULT_INBOX_PREFIX: Final = "_INBOX"
"""The reply inbox prefix of a client without a NATS user (no authorization: nothing to hide)."""

_TOKEN = re.compile(r"[A-Za-z0-9_-]+")


class NatsConnectError(ConnectionError):
    """The first connection to NATS did not succeed within ``initial_wait``."""


def inbox_prefix_for(user: str | None) -> str:
    """The reply inbox prefix of a NATS user: ``_INBOX_<user>`` (``_INBOX`` without a user).

    ``deploy/nats/nats.conf`` lets each user subscribe only to its own ``_INBOX_<user>.>``.

    Args:
        user: The NATS user, or None.

    Returns:
        The prefix (one subject token).

    Raises:
        ValueError: ``user`` cannot be part of a subject token (letters, digits, ``_`` and ``-``).
    """
    if not user:
        return DEFAULT_INBOX_PREFIX
    if not _TOKEN.fullmatch(user):
        raise ValueError(
            f"NATS user {user!r} cannot name a reply inbox: use letters, digits, '_' and '-'"
        )
    return f"{DEFAULT_INBOX_PREFIX}_{user}"


def redact_url(url: str | Sequence[str]) -> str:
    """Server URLs fit for logs: user information removed.

    Args:
        url: One URL, several separated by commas, or a sequence of URLs
            (:func:`natsbus.urls.parse_nats_urls`).

    Returns:
        The URLs without ``user:password@``, separated by commas.

    Raises:
        NatsUrlError: ``url`` is not a usable list of NATS URLs.
    """
    return ",".join(one.shown for one in parse_nats_urls(url))


async def connect(
    url: str | Sequence[str],
    *,
    name: str,
    user: str | None = None,
    password: str | None = None,
    inbox_prefix: str | None = None,
    connect_timeout: float = 2.0,
    initial_wait: float = 10.0,
    reconnect_wait: float = 1.0,
) -> Client:
    """Connect to NATS, retrying the first connection until ``initial_wait`` passes.

    After the first connection the client reconnects forever (``max_reconnect_attempts=-1``),
    buffering publishes while it is away. Connection events are logged without credentials.

    Args:
        url: The server URL, several separated by commas, or a sequence of URLs
            (:func:`natsbus.urls.parse_nats_urls`); the client connects to any of them and
            reconnects across all of them.
        name: The connection name shown by the server's monitoring (the service name).
        user: The NATS user, if the server requires one.
        password: The NATS password for ``user``.
        inbox_prefix: The prefix of the client's reply inboxes (requests, JetStream API replies,
            publish acks and pull-consumer deliveries all arrive there). None:
            :func:`inbox_prefix_for` ``(user)``, the only inbox the server lets ``user`` read.
        connect_timeout: Seconds allowed for each connection attempt.
        initial_wait: Seconds the first connection may take, all attempts included.
        reconnect_wait: Seconds between attempts to the same server.

    Returns:
        A connected client.

    Raises:
        NatsConnectError: No connection within ``initial_wait``. It names and chains the server's
            refusal (``-ERR``, e.g. an authorization violation) if the server gave one, else the
            last error.
        ValueError: ``inbox_prefix`` is not one or more subject tokens (or ``user`` cannot name
            an inbox when ``inbox_prefix`` is None); :class:`~natsbus.urls.NatsUrlError`:
            ``url`` is not a usable list of NATS URLs.
    """
    if inbox_prefix is None:
        inbox_prefix = inbox_prefix_for(user)
    elif not all(_TOKEN.fullmatch(part) for part in inbox_prefix.split(".")):
        raise ValueError(f"inbox prefix {inbox_prefix!r} is not a subject without wildcards")
    servers = parse_nats_urls(url)
    nc = Client()
    events = _ConnectionEvents(nc, ",".join(one.shown for one in servers))
    try:
        async with asyncio.timeout(initial_wait):
            await nc.connect(
                servers=[one.url for one in servers],
                name=name,
                user=user,
                password=password,
                inbox_prefix=inbox_prefix,
                connect_timeout=connect_timeout,  # type: ignore[arg-type]
                reconnect_time_wait=reconnect_wait,  # type: ignore[arg-type]
                allow_reconnect=True,
                max_reconnect_attempts=-1,
                error_cb=events.on_error,
                disconnected_cb=events.on_disconnected,
                reconnected_cb=events.on_reconnected,
                closed_cb=events.on_closed,
            )
    except TimeoutError as exc:
        await nc.close()
        raise events.connect_error(exc, initial_wait) from events.cause(exc)
    logger.info("nats %s: connected as %s", events.shown, name)
    return nc


class _ConnectionEvents:
    """Logs a connection's events (without credentials) and keeps its last errors.

    A refused attempt (``-ERR 'Authorization Violation'``) may report a second error right after
    the refusal: the server drops the connection at once (often by a TCP reset, the client's PING
    still unread), and nats-py's cleanup of that socket then reports ``ConnectionResetError`` too.
    That echo must not hide the reason, so the server's last refusal is kept apart from the last
    error.
    """

    def __init__(self, nc: Client, shown: str) -> None:
        self._nc = nc
        self.shown = shown
        """The server URL(s) without credentials."""
        self.last_error: Exception | None = None
        self.refusal: Exception | None = None

    async def on_error(self, error: Exception) -> None:
        """Keep and log an error (a refusal apart)."""
        self.last_error = error
        if _is_refusal(error):
            self.refusal = error
        logger.warning("nats %s: %s", self.shown, str(error) or type(error).__name__)

    async def on_disconnected(self) -> None:
        """Warn of a lost connection (a deliberate close is not worth a warning)."""
        if not self._nc.is_closed:
            logger.warning("nats %s: disconnected", self.shown)

    async def on_reconnected(self) -> None:
        """Note the connection is back."""
        logger.info("nats %s: reconnected", self.shown)

    async def on_closed(self) -> None:
        """Note the connection is closed."""
        logger.info("nats %s: connection closed", self.shown)

    def cause(self, timeout: TimeoutError) -> BaseException:
        """Why the first connection failed: the server's refusal, else the last error."""
        return self.refusal or self.last_error or timeout

    def connect_error(self, timeout: TimeoutError, initial_wait: float) -> NatsConnectError:
        """The error for a first connection that did not succeed within ``initial_wait``."""
        last = self.last_error or timeout
        cause = self.cause(timeout)
        reason = _describe(cause)
        if last is not cause:
            reason += f" (last error: {_describe(last)})"
        return NatsConnectError(
            f"could not connect to NATS at {self.shown} within {initial_wait:g} s: {reason}"
        )


def _is_refusal(error: Exception) -> bool:
    """Whether ``error`` is the server's answer (``-ERR ...``) rather than a transport failure."""
    return isinstance(error, nats_errors.Error) and not isinstance(error, TimeoutError)


def _describe(error: BaseException) -> str:
    return str(error) or type(error).__name__
