"""A workspace's audit as the services that act on it show it: the rows of their workspace
operations (every host step they ran, with the tail of its output) and the rows of its audit trail
(their stored events). The realizer and the supervisor each keep their own operations and events;
the gateway merges both, so both build them here, the same way.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Protocol
from uuid import UUID

from contracts.base import Actor
from contracts.event_filters import parse_event_filter
from contracts.execution_views import (
    OperationSource,
    WorkspaceEventRow,
    WorkspaceOperation,
    WorkspaceOperationDetail,
)
from contracts.workspace_views import Page
from eventstore import stored_event_view
from eventstore.envelope import event_id

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from contracts.base import Event

__all__ = [
    "EXCERPT_BYTES",
    "OperationRecord",
    "RefIdentified",
    "audit_row",
    "event_page",
    "excerpt",
    "operation_detail",
    "operation_row",
]

EXCERPT_BYTES: Final = 64 * 1024
"""Output kept per stream in stored events and in replies (ARCHITECTURE §2)."""


class RefIdentified:
    """Mixed into a workspace operation aggregate: its id is the ``operation_ref`` chosen before
    recording, so that its output files can be named after it."""

    @staticmethod
    def create_id(operation_ref: str) -> UUID:
        """The aggregate id of the operation ``operation_ref`` (eventsourcing calls it)."""
        return UUID(operation_ref)


def excerpt(data: bytes) -> tuple[str, bool]:
    """The last 64 KiB of ``data`` as text, and whether anything was cut."""
    cut = len(data) > EXCERPT_BYTES
    return data[-EXCERPT_BYTES:].decode("utf-8", errors="replace"), cut


class OperationRecord(Protocol):
    """What a service's workspace operation aggregate holds (read only here)."""

    @property
    def id(self) -> UUID: ...

    @property
    def company_id(self) -> str: ...

    @property
    def execution_workspace_id(self) -> str | None: ...

    @property
    def phase(self) -> str: ...

    @property
    def command(self) -> str: ...

    @property
    def cwd(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def exit_code(self) -> int | None: ...

    @property
    def started_at(self) -> datetime: ...

    @property
    def finished_at(self) -> datetime | None: ...

    @property
    def run_id(self) -> str | None: ...

    @property
    def issue_id(self) -> str | None: ...

    @property
    def operation_id(self) -> str | None: ...

    @property
    def metadata(self) -> Mapping[str, Any]: ...

    @property
    def stdout_excerpt(self) -> str: ...

    @property
    def stderr_excerpt(self) -> str: ...

    @property
    def truncated(self) -> bool: ...

    @property
    def stdout_bytes(self) -> int: ...

    @property
    def stderr_bytes(self) -> int: ...


def event_page(
    rows: Iterable[WorkspaceEventRow], types: list[str] | None, offset: int, limit: int
) -> Page[WorkspaceEventRow]:
    """The page ``offset``/``limit`` of ``rows`` (oldest first) of the types ``types`` asks for
    (:func:`contracts.event_filters.parse_event_filter`; None: all), and how many there are."""
    wanted = parse_event_filter(types)
    kept = [row for row in rows if wanted is None or wanted.matches(row.type)]
    return Page(items=kept[offset : offset + limit], total=len(kept))


def operation_row(operation: OperationRecord, source: OperationSource) -> WorkspaceOperation:
    """A list row: no excerpts."""
    return WorkspaceOperation(
        id=str(operation.id),
        company_id=operation.company_id,
        execution_workspace_id=operation.execution_workspace_id,
        phase=operation.phase,
        command=operation.command,
        cwd=operation.cwd,
        status=operation.status,  # type: ignore[arg-type] # the aggregate keeps to the statuses
        exit_code=operation.exit_code,
        started_at=operation.started_at,
        finished_at=operation.finished_at,
        run_id=operation.run_id,
        issue_id=operation.issue_id,
        operation_id=operation.operation_id,
        source=source,
        metadata=dict(operation.metadata),
    )


def operation_detail(
    operation: OperationRecord, source: OperationSource
) -> WorkspaceOperationDetail:
    """The row plus the last 64 KiB of each stream."""
    row = operation_row(operation, source)
    return WorkspaceOperationDetail(
        **{f: getattr(row, f) for f in row.__struct_fields__},
        stdout_excerpt=operation.stdout_excerpt,
        stderr_excerpt=operation.stderr_excerpt,
        truncated=operation.truncated,
        stdout_bytes=operation.stdout_bytes,
        stderr_bytes=operation.stderr_bytes,
    )


def audit_row(
    domain_event: Any, to_contract: Callable[[Any], Event | None], source: OperationSource
) -> WorkspaceEventRow:
    """One stored event as a row of a workspace's audit trail: its public type when it has one
    (else the type derived from its class, never the class name) and its label, its ``eventId``
    as published, its cause and its data (without the tenant)."""
    stored = stored_event_view(domain_event, to_contract=to_contract)
    return WorkspaceEventRow(
        event_id=event_id(domain_event),
        type=stored.type,
        label=stored.label,
        source=source,
        aggregate_id=stored.aggregate_id,
        aggregate_version=stored.aggregate_version,
        occurred_at=stored.occurred_at,
        actor=Actor(**stored.actor) if stored.actor else None,
        run_id=stored.run_id,
        reason=stored.reason,
        data={k: v for k, v in stored.data.items() if k != "tenant_id"},
    )
