"""Readiness checks for service processes: a NATS request (the micro ping) or any callable.

The ping connects as the service's NATS user with that user's private reply inbox
(``_INBOX_<user>``, the only one ``deploy/nats/nats.conf`` lets the user read; the same rule as
``natsbus.connection.inbox_prefix_for``, which testkit does not depend on).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["PingCheck", "ReadyCheck", "holds", "inbox_prefix"]

ReadyCheck = Callable[[], bool | Awaitable[bool]]
"""A readiness check: returns (or resolves to) True once the service is ready."""


def inbox_prefix(user: str | None) -> str:
    """The reply inbox prefix of a NATS user: ``_INBOX_<user>``, or ``_INBOX`` without one.

    Args:
        user: The NATS user, or None.

    Returns:
        The prefix.
    """
    return f"_INBOX_{user}" if user else "_INBOX"


async def holds(check: ReadyCheck) -> bool:
    """Evaluate a readiness check, awaiting it when it is async.

    Args:
        check: The check.

    Returns:
        Its truth value.
    """
    result = check()
    if inspect.isawaitable(result):
        result = await result
    return bool(result)


class PingCheck:
    """A readiness check that requests a subject over one NATS connection; any reply means ready.

    ``url`` is one server or several separated by commas (``natsbus.urls.parse_nats_urls``).
    """

    def __init__(self, *, url: str, user: str | None, password: str | None, subject: str) -> None:
        self.url, self.user, self.password, self.subject = url, user, password, subject
        self._nc: Any = None

    async def __call__(self) -> bool:
        """Request the subject once (connecting first when needed).

        Returns:
            True when a reply came; False on no responders, timeout or connection failure.
        """
        from nats.aio.client import Client as NATS
        from nats.errors import Error as NatsError

        from natsbus.urls import parse_nats_urls

        try:
            if self._nc is None:
                client = NATS()
                try:
                    await client.connect(
                        [one.url for one in parse_nats_urls(self.url)],
                        user=self.user,
                        password=self.password,
                        inbox_prefix=inbox_prefix(self.user),
                        connect_timeout=1,
                        allow_reconnect=False,
                        max_reconnect_attempts=0,
                        error_cb=_ignore_error,
                    )
                except BaseException:
                    await client.close()  # a failed connect leaves its transport open otherwise
                    raise
                self._nc = client
            await self._nc.request(self.subject, b"", timeout=0.5)
            return True
        except (NatsError, OSError, TimeoutError):
            if self._nc is not None and self._nc.is_closed:
                self._nc = None  # the server went away meanwhile: connect again next round
            return False

    async def aclose(self) -> None:
        """Close the connection (safe to call more than once)."""
        if self._nc is not None:
            with contextlib.suppress(Exception):
                await self._nc.close()
            self._nc = None


async def _ignore_error(error: Exception) -> None:
    return None
