"""Subject builders. Services never write subject literals; they call these.

Layout (ARCHITECTURE §2): ``ws.evt.<aggregate>.<event>``, ``ws.cmd.<aggregate>.<verb>[.<node>]``,
``ws.qry.<aggregate>.<noun>``, and service-wide queries ``ws.qry.<service>.<noun>``. Tokens are
lowercase ``[a-z0-9_-]``. Each aggregate token has exactly one owning service.
"""

from __future__ import annotations

import re
from typing import Final, Literal

__all__ = [
    "AGGREGATE_OWNERS",
    "EVENT_STREAM",
    "EVENT_STREAM_SUBJECTS",
    "SERVICES",
    "SERVICE_NAMES",
    "SHARED_AGGREGATES",
    "ServiceToken",
    "aggregate_events",
    "aggregates_of",
    "command",
    "event",
    "event_filters_of",
    "event_subject",
    "on_node",
    "query",
    "service_query",
    "token",
]

ServiceToken = Literal["gateway", "realizer", "supervisor", "controller", "credentials"]

SERVICES: Final[tuple[ServiceToken, ...]] = (
    "gateway",
    "realizer",
    "supervisor",
    "controller",
    "credentials",
)

SERVICE_NAMES: Final[dict[ServiceToken, str]] = {
    "gateway": "api-gateway",
    "realizer": "workspace-realizer",
    "supervisor": "runtime-supervisor",
    "controller": "heartbeat-controller",
    "credentials": "git-credentials",
}
"""Service token -> the service's process and package name."""

AGGREGATE_OWNERS: Final[dict[str, ServiceToken]] = {
    "company": "gateway",
    "api_key": "gateway",
    "session": "gateway",
    "run_token": "gateway",
    "project": "realizer",
    "project_workspace": "realizer",
    "issue": "realizer",
    "workspace": "realizer",
    "runtime_service": "supervisor",
    "job": "supervisor",
    "runtime_provisioning": "supervisor",
    "slot": "supervisor",
    "egress": "supervisor",
    "agent": "controller",
    "wakeup": "controller",
    "run": "controller",
    "secret": "credentials",
    "credential": "credentials",
}
"""Aggregate token -> its single owning service."""

SHARED_AGGREGATES: Final[tuple[str, ...]] = ("operation", "inbox")
"""Aggregate tokens every service has its own instances of (its long-work operations, its inbox).
Their events carry the publishing service as a last token: ``ws.evt.operation.finished.realizer``."""

EVENT_STREAM: Final = "WS_EVENTS"
EVENT_STREAM_SUBJECTS: Final = "ws.evt.>"

_TOKEN = re.compile(r"^[a-z0-9_-]+$")


def token(value: str) -> str:
    """Return ``value`` if it is a valid subject token, else raise ``ValueError``."""
    if not _TOKEN.match(value):
        raise ValueError(f"invalid subject token {value!r}: use lowercase [a-z0-9_-]")
    return value


def event(aggregate: str, name: str) -> str:
    """``ws.evt.<aggregate>.<name>``: where events of that kind are published."""
    return f"ws.evt.{token(aggregate)}.{token(name)}"


def aggregate_events(aggregate: str) -> str:
    """``ws.evt.<aggregate>.>``: every event of that aggregate."""
    return f"ws.evt.{token(aggregate)}.>"


def event_subject(type_tag: str, service: ServiceToken) -> str:
    """The subject of an event from its versioned type tag (``company.created.v1``).

    ``service`` is the publisher; it must own the aggregate, and it becomes the last token for the
    shared aggregates (``operation``, ``inbox``).
    """
    parts = type_tag.split(".")
    if len(parts) != 3 or not re.fullmatch(r"v\d+", parts[2]):
        raise ValueError(f"event type {type_tag!r} is not '<aggregate>.<event>.v<N>'")
    aggregate, name = parts[0], parts[1]
    if aggregate in SHARED_AGGREGATES:
        return f"{event(aggregate, name)}.{token(service)}"
    owner = AGGREGATE_OWNERS.get(aggregate)
    if owner != service:
        raise ValueError(
            f"{service!r} may not publish {type_tag!r}: {aggregate!r} is owned by {owner!r}"
        )
    return event(aggregate, name)


def command(aggregate: str, verb: str, node: str | None = None) -> str:
    """``ws.cmd.<aggregate>.<verb>`` with the node as a last token for host-bound commands."""
    subject = f"ws.cmd.{token(aggregate)}.{token(verb)}"
    return f"{subject}.{token(node)}" if node is not None else subject


def on_node(query_subject: str, node: str) -> str:
    """``<query>.<node>``: a query that reads one host's files or processes (a workspace's git
    state, a service's log) as that node's own instance alone serves it. The plain subject is
    served by every instance, which sends a request for another node's record on to this one
    (docs/scale-out.md, "Worker nodes")."""
    return f"{query_subject}.{token(node)}"


def query(aggregate: str, noun: str) -> str:
    """``ws.qry.<aggregate>.<noun>``."""
    return f"ws.qry.{token(aggregate)}.{token(noun)}"


def service_query(service: ServiceToken, noun: str) -> str:
    """``ws.qry.<service>.<noun>``: a service-wide query such as ``audit``."""
    if service not in SERVICES:
        raise ValueError(f"unknown service token {service!r}; expected one of {SERVICES}")
    return f"ws.qry.{service}.{token(noun)}"


def aggregates_of(service: ServiceToken) -> tuple[str, ...]:
    """The aggregate tokens a service owns (its own ``operation`` excluded)."""
    return tuple(agg for agg, owner in AGGREGATE_OWNERS.items() if owner == service)


def event_filters_of(service: ServiceToken) -> tuple[str, ...]:
    """Subject filters selecting every event a service publishes (for inbox consumers)."""
    own = [aggregate_events(agg) for agg in aggregates_of(service)]
    shared = [f"ws.evt.{agg}.*.{service}" for agg in SHARED_AGGREGATES]
    return (*own, *shared)
