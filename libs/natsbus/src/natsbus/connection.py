"""Connecting to NATS: retry the first connection for a while, then reconnect forever.

A service may start before its NATS server answers (``just up`` starts them side by side), so the
first connection is retried until ``initial_wait`` passes. Once connected, the client never gives
up reconnecting: a NATS restart must not take the services down with it.
"""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import urlsplit, urlunsplit

from nats import errors as nats_errors
from nats.aio.client import Client

__all__ = ["NatsConnectError", "connect", "redact_url"]

logger = logging.getLogger(__name__)


class NatsConnectError(ConnectionError):
    """The first connection to NATS did not succeed within ``initial_wait``."""


def redact_url(url: str) -> str:
    """A server URL fit for logs: user information removed.

    Args:
        url: One URL or several separated by commas.

    Returns:
        The same URL(s) without ``user:password@``.
    """
    redacted = []
    for one in url.split(","):
        parts = urlsplit(one.strip())
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        redacted.append(urlunsplit((parts.scheme, netloc, parts.path, "", "")))
    return ",".join(redacted)


async def connect(
    url: str,
    *,
    name: str,
    user: str | None = None,
    password: str | None = None,
    connect_timeout: float = 2.0,
    initial_wait: float = 10.0,
    reconnect_wait: float = 1.0,
) -> Client:
    """Connect to NATS, retrying the first connection until ``initial_wait`` passes.

    After the first connection the client reconnects forever (``max_reconnect_attempts=-1``),
    buffering publishes while it is away. Connection events are logged without credentials.

    Args:
        url: The server URL, or several separated by commas.
        name: The connection name shown by the server's monitoring (the service name).
        user: The NATS user, if the server requires one.
        password: The NATS password for ``user``.
        connect_timeout: Seconds allowed for each connection attempt.
        initial_wait: Seconds the first connection may take, all attempts included.
        reconnect_wait: Seconds between attempts to the same server.

    Returns:
        A connected client.

    Raises:
        NatsConnectError: No connection within ``initial_wait``. It names and chains the server's
            refusal (``-ERR``, e.g. an authorization violation) if the server gave one, else the
            last error.
    """
    shown = redact_url(url)
    last_error: list[Exception] = []
    # A refused attempt (``-ERR 'Authorization Violation'``) may report a second error right
    # after the refusal: the server drops the connection at once (often by a TCP reset, the
    # client's PING still unread), and nats-py's cleanup of that socket then reports
    # ``ConnectionResetError`` too. That echo must not hide the reason, so the server's last
    # refusal is kept apart from the last error.
    refusal: list[Exception] = []

    async def on_error(error: Exception) -> None:
        last_error[:] = [error]
        if _is_refusal(error):
            refusal[:] = [error]
        logger.warning("nats %s: %s", shown, str(error) or type(error).__name__)

    async def on_disconnected() -> None:
        if not nc.is_closed:  # a deliberate close is not worth a warning
            logger.warning("nats %s: disconnected", shown)

    async def on_reconnected() -> None:
        logger.info("nats %s: reconnected", shown)

    async def on_closed() -> None:
        logger.info("nats %s: connection closed", shown)

    nc = Client()
    try:
        async with asyncio.timeout(initial_wait):
            await nc.connect(
                servers=[one.strip() for one in url.split(",")],
                name=name,
                user=user,
                password=password,
                connect_timeout=connect_timeout,  # type: ignore[arg-type]
                reconnect_time_wait=reconnect_wait,  # type: ignore[arg-type]
                allow_reconnect=True,
                max_reconnect_attempts=-1,
                error_cb=on_error,
                disconnected_cb=on_disconnected,
                reconnected_cb=on_reconnected,
                closed_cb=on_closed,
            )
    except TimeoutError as exc:
        await nc.close()
        last = last_error[0] if last_error else exc
        cause = refusal[0] if refusal else last
        reason = _describe(cause)
        if last is not cause:
            reason += f" (last error: {_describe(last)})"
        raise NatsConnectError(
            f"could not connect to NATS at {shown} within {initial_wait:g} s: {reason}"
        ) from cause
    logger.info("nats %s: connected as %s", shown, name)
    return nc


def _is_refusal(error: Exception) -> bool:
    """Whether ``error`` is the server's answer (``-ERR ...``) rather than a transport failure."""
    return isinstance(error, nats_errors.Error) and not isinstance(error, TimeoutError)


def _describe(error: BaseException) -> str:
    return str(error) or type(error).__name__
