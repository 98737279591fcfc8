"""Use cases of a workspace's egress records (docs/design/isolation.md): what a namespace's gate
counted in one period becomes one :class:`~runtime_supervisor.domain.EgressSeen` per distinct
(host, port, verdict), observed once and tallied when the period ended with more."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from runtime_supervisor.domain import EgressSeen, EgressVerdict, egress_id
from runtime_supervisor.usecases.queries import Queries

__all__ = ["EgressOwner", "EgressPeriod", "EgressUseCases", "Seen"]


@dataclass(frozen=True, kw_only=True)
class EgressOwner:
    """Whose namespace it is: its company, and the workspace it belongs to (none: a run's own)."""

    company_id: str
    target_key: str | None = None
    execution_workspace_id: str | None = None
    project_workspace_id: str | None = None
    project_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class Seen:
    """One (host, port, verdict) of a period, as the gate counted it."""

    host: str
    port: int
    verdict: EgressVerdict
    count: int
    first_at: datetime
    last_at: datetime


@dataclass(frozen=True, kw_only=True)
class EgressPeriod:
    """A period of a namespace: ``key`` (the run's id or ``idle:<when>``), its run, whether it
    ended, and what was seen in it."""

    key: str
    run_id: str | None
    ended: bool
    seen: tuple[Seen, ...]


class EgressUseCases(Queries):
    """Record what the namespaces' gates counted."""

    def note_egress(self, namespace: str, owner: EgressOwner, period: EgressPeriod) -> int:
        """Record what is new in ``period`` of ``namespace``; return how many records changed.

        A (host, port, verdict) is observed the first time it is seen, with its count then; an
        ended period's final counts are tallied where they grew."""
        changed: list[EgressSeen] = []
        for seen in period.seen:
            key = egress_id(namespace, period.key, seen.host, seen.port, seen.verdict)
            found = self.egress.get(str(key))
            if found is None:
                changed.append(
                    EgressSeen(
                        company_id=owner.company_id,
                        namespace=namespace,
                        period=period.key,
                        target_key=owner.target_key,
                        execution_workspace_id=owner.execution_workspace_id,
                        project_workspace_id=owner.project_workspace_id,
                        host=seen.host,
                        port=seen.port,
                        verdict=seen.verdict,
                        count=seen.count,
                        first_at=seen.first_at,
                        last_at=seen.last_at,
                    )
                )
            elif period.ended and seen.count > found.count:
                record: EgressSeen = self.load(found.id)
                record.tally(seen.count, seen.last_at)
                changed.append(record)
        if changed:
            self.save(*changed)
        return len(changed)
