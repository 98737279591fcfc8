"""Use cases of the copies fed by the inbox: each saves the copy's change with the upstream
position it reacts to (one transaction), so an event is applied exactly once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from runtime_supervisor.domain import CopyKind, RuntimeService, UpstreamCopy
from runtime_supervisor.domain.copies import CopyCounter, CopyFields
from runtime_supervisor.usecases.services import Release, ServiceUseCases

if TYPE_CHECKING:
    from eventsourcing.persistence import Tracking

__all__ = ["CopyUseCases"]


class CopyUseCases(ServiceUseCases):
    """Keep the copies of workspaces, project workspaces, issues and runs."""

    def _copy_change(
        self,
        kind: CopyKind,
        key: str,
        company_id: str | None,
        fields: CopyFields,
        increments: Sequence[CopyCounter],
    ) -> UpstreamCopy | None:
        """The copy with ``fields`` noted (created when new); None when nothing changed."""
        existing = self.copy_of(kind, key)
        values = fields.copy()
        for name in increments:
            values[name] = int(existing.get(name, 0) if existing else 0) + 1
        if existing is None:
            return UpstreamCopy(kind=kind, key=key, company_id=company_id, fields=values)
        copy: UpstreamCopy = self.load(existing.id)
        return copy if copy.note(values) else None

    def _save_all(self, *objs: Any, tracking: Tracking | None) -> None:
        if tracking is not None:
            self.save_with_tracking(*objs, tracking=tracking)
        elif objs:
            self.save(*objs)

    def note_copy(
        self,
        kind: CopyKind,
        key: str,
        company_id: str | None,
        fields: CopyFields,
        tracking: Tracking | None = None,
        *,
        increments: Sequence[CopyCounter] = (),
    ) -> bool:
        """Note what an upstream event says of a record (created on its first event, whichever
        it is); return whether the copy changed.

        Args:
            kind: ``workspace``, ``project_workspace``, ``issue`` or ``run``.
            key: The record's id upstream.
            company_id: Its company (the event's envelope).
            fields: Plain data to set.
            tracking: The upstream position (saved with the change, or alone).
            increments: Counters to add one to (``checkout_version`` on a rebuilt worktree).
        """
        copy = self._copy_change(kind, key, company_id, fields, increments)
        self._save_all(*([copy] if copy is not None else []), tracking=tracking)
        return copy is not None

    def note_run_finished(
        self,
        run_id: str,
        company_id: str | None,
        fields: CopyFields,
        tracking: Tracking | None = None,
    ) -> list[Release]:
        """A run ended: note it and release every lease it held, in one save (reference §6.7).

        Returns:
            As :meth:`release_run`: each instance the run held, and whether no run holds it now.
        """
        copy = self._copy_change("run", run_id, company_id, fields, ())
        released: list[RuntimeService] = self._released(run_id)
        self._save_all(*([copy] if copy is not None else []), *released, tracking=tracking)
        return [(self.services[str(s.id)].record(), not s.lease_run_ids) for s in released]
