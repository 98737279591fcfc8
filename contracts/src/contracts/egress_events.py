"""Public events of a workspace's egress (owner: runtime-supervisor; docs/design/isolation.md).

Aggregate ``egress``: one per distinct (host, port, verdict) that one network namespace's gate
saw in one period (a run's hold of the workspace, ``runId`` of the envelope; or the time between
runs). ``egress.observed.v1`` when it is first counted, with the count so far;
``egress.tallied.v1`` when the period ended with more. Port 53 is a DNS query for ``host``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from contracts.base import Event

__all__ = ["EgressObserved", "EgressTallied", "EgressVerdict"]

EgressVerdict = Literal["allowed", "denied"]


class EgressObserved(Event, tag="egress.observed.v1", frozen=True, kw_only=True):
    """A workspace's process first reached (``allowed``) or was kept from (``denied``) a host
    and port in this period."""

    execution_workspace_id: str | None = None
    project_workspace_id: str | None = None
    host: str
    """The DNS name the gate answered for the address, else the address."""
    port: int
    verdict: EgressVerdict
    count: int
    first_at: datetime
    last_at: datetime


class EgressTallied(Event, tag="egress.tallied.v1", frozen=True, kw_only=True):
    """The period ended: how many times in all it was reached or kept from it."""

    execution_workspace_id: str | None = None
    project_workspace_id: str | None = None
    host: str
    port: int
    verdict: EgressVerdict
    count: int
    first_at: datetime
    last_at: datetime
