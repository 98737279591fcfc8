"""What a workspace's processes reached, or tried to reach, outside their network namespace
(docs/design/isolation.md): one :class:`EgressSeen` per distinct (host, port, verdict) of one
period of one namespace, a period being a run's hold of the workspace or the time between runs.

It is recorded when the gate first counts it (``Observed``, with the count so far) and, when the
period ends with more connections than that, once more with the final count (``Tallied``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID, uuid5

from eventsourcing.domain import event

from runtime_supervisor.domain.base import CompanyScoped

__all__ = ["EgressSeen", "EgressVerdict", "egress_id"]

EgressVerdict = Literal["allowed", "denied"]
_NAMESPACE = UUID("0c9e4b7a-2f61-5d38-9a0e-7b1c6d2e3f40")


def egress_id(namespace: str, period: str, host: str, port: int, verdict: str) -> UUID:
    """The id of one (host, port, verdict) of one period of a namespace."""
    return uuid5(_NAMESPACE, f"{namespace}\0{period}\0{host}\0{port}\0{verdict}")


class EgressSeen(CompanyScoped):
    """Connections (or DNS queries, port 53) from one namespace to one host and port, all
    allowed or all denied, within one period. The period's run is its events' ``run_id``
    (the cause they are stamped with)."""

    event_aggregate = "egress"

    @staticmethod
    def create_id(namespace: str, period: str, host: str, port: int, verdict: str) -> UUID:
        """One record per namespace, period, host, port and verdict."""
        return egress_id(namespace, period, host, port, verdict)

    @event("Observed")
    def __init__(
        self,
        *,
        company_id: str,
        namespace: str,
        period: str,
        target_key: str | None,
        execution_workspace_id: str | None,
        project_workspace_id: str | None,
        host: str,
        port: int,
        verdict: EgressVerdict,
        count: int,
        first_at: datetime,
        last_at: datetime,
    ) -> None:
        self.company_id = company_id  # type: ignore[assignment]
        self.namespace = namespace
        self.period = period
        self.target_key = target_key
        self.execution_workspace_id = execution_workspace_id
        self.project_workspace_id = project_workspace_id
        self.host = host
        self.port = port
        self.verdict = verdict
        self.count = count
        self.first_at = first_at
        self.last_at = last_at
        self.final = False
        """Whether ``count`` is the period's last word (it ended)."""

    def tally(self, count: int, last_at: datetime) -> bool:
        """The period ended with ``count`` connections; recorded when it adds any."""
        if count <= self.count:
            return False
        self._tallied(
            execution_workspace_id=self.execution_workspace_id,
            project_workspace_id=self.project_workspace_id,
            host=self.host,
            port=self.port,
            verdict=self.verdict,
            count=count,
            first_at=self.first_at,
            last_at=last_at,
        )
        return True

    @event("Tallied")
    def _tallied(
        self,
        execution_workspace_id: str | None,
        project_workspace_id: str | None,
        host: str,
        port: int,
        verdict: EgressVerdict,
        count: int,
        first_at: datetime,
        last_at: datetime,
    ) -> None:
        """(Each event names what it counts, so that it reads alone.)"""
        del execution_workspace_id, project_workspace_id, host, port, verdict, first_at
        self.count = count
        self.last_at = last_at
        self.final = True
