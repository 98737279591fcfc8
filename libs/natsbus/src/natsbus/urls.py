"""NATS server URLs: one, or a comma list of a cluster's servers (``CLIPYARD_NATS_URL``).

The one parser of that setting: the services' settings, :func:`natsbus.connection.connect`, the
CLI and the test kit all read it through :func:`parse_nats_urls`. Spaces around entries are
tolerated; each entry is checked (scheme, host, port) and a bad one is refused by name, with an
example of a good value. An entry without a scheme is a ``nats://`` one, as nats-py reads it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

__all__ = ["DEFAULT_NATS_URL", "NATS_URL_EXAMPLE", "NatsUrl", "NatsUrlError", "parse_nats_urls"]

DEFAULT_NATS_URL: Final = "nats://127.0.0.1:4222"
"""The server of the embedded stack (``clipyard up``)."""

NATS_URL_EXAMPLE: Final = "nats://10.0.0.1:4222,nats://10.0.0.2:4222"
"""A good value, shown with every refusal."""

_DEFAULT_PORTS: Final = {"nats": 4222, "tls": 4222, "ws": 80, "wss": 443}
_HOST: Final = re.compile(r"[A-Za-z0-9._%:-]+")
"""A host name, IPv4 address or (bracketed in the URL) IPv6 address."""


class NatsUrlError(ValueError):
    """A NATS URL list cannot be used; the message names the entry and shows a good value."""


@dataclass(frozen=True)
class NatsUrl:
    """One server of the list."""

    url: str = field(repr=False)
    """The URL as nats-py takes it (with its scheme, and user information if given)."""
    scheme: str
    host: str
    port: int
    """The given port, else the scheme's default (4222 for ``nats://``)."""

    @property
    def shown(self) -> str:
        """The URL fit for logs and messages: no user information."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def parse_nats_urls(
    value: str | Sequence[str], *, setting: str = "CLIPYARD_NATS_URL"
) -> tuple[NatsUrl, ...]:
    """Every server of ``value``, in order.

    Args:
        value: One URL, several separated by commas (spaces around them tolerated), or a
            sequence of URLs.
        setting: What the value is called in a refusal.

    Returns:
        The servers (at least one; duplicates removed).

    Raises:
        NatsUrlError: The value names no server, has an empty entry, an entry that is not a
            NATS URL, or mixes websocket and plain servers; the message names the entry.
    """
    entries = value.split(",") if isinstance(value, str) else list(value)
    if not "".join(entries).strip():
        raise _refusal(setting, "names no server")
    servers: list[NatsUrl] = []
    for entry in entries:
        one = _parse_one(entry.strip(), setting)
        if one not in servers:
            servers.append(one)
    if len({one.scheme in ("ws", "wss") for one in servers}) > 1:
        raise _refusal(setting, "mixes websocket (ws://, wss://) and plain servers")
    return tuple(servers)


def _parse_one(entry: str, setting: str) -> NatsUrl:
    if not entry:
        raise _refusal(setting, "has an empty entry (a comma too many)")
    shown = _without_userinfo(entry)
    if re.search(r"[\s;]", entry):
        why = "it holds a space or ';' (separate the servers with commas)"
        raise _refusal(setting, f"has {shown!r}, which is not one NATS URL: {why}")
    url = entry if "://" in entry else f"nats://{entry}"
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        why = f"its scheme {parts.scheme!r} is not nats, tls, ws or wss"
        raise _refusal(setting, f"has {shown!r}, which is not a NATS URL: {why}")
    try:
        port = parts.port
    except ValueError:
        port = -1
    host = parts.hostname or ""
    if port == -1 or port == 0:
        raise _refusal(setting, f"has {shown!r}, which has no valid port (1-65535)")
    if not _HOST.fullmatch(host):
        raise _refusal(setting, f"has {shown!r}, which names no valid host")
    if parts.path.strip("/") or parts.query or parts.fragment:
        raise _refusal(setting, f"has {shown!r}, which has more than a host and a port")
    return NatsUrl(
        url=f"{scheme}://{parts.netloc}",
        scheme=scheme,
        host=host,
        port=port or _DEFAULT_PORTS[scheme],
    )


def _without_userinfo(entry: str) -> str:
    """``entry`` with anything between ``://`` and the last ``@`` replaced by ``***``."""
    scheme, sep, rest = entry.rpartition("://")
    if "@" not in rest:
        return entry
    return f"{scheme}{sep}***@{rest.rpartition('@')[2]}"


def _refusal(setting: str, what: str) -> NatsUrlError:
    return NatsUrlError(
        f"{setting} {what}; give one NATS URL or several separated by commas, "
        f"such as {NATS_URL_EXAMPLE}"
    )
