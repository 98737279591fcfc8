"""A workspace's records as the detail page shows them: the newest operations and events, and one
operation with its output.

Operations and events are stored by whichever service did the work (``OPERATION_SOURCES``: the
workspace-realizer and the runtime-supervisor); each source answers a window of its rows oldest
first with the number of rows it holds (``Page.total``, the API's ``X-Total-Count``). The page
shows the NEWEST rows: each source is read from ``total - window`` (a second request only when
it holds more than the window), the sources' tails are merged by time and the last ``window``
rows kept. The realizer owns the workspace, so its refusal (404 for another company's) is raised;
another source's refusal leaves its rows out with a warning.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

import msgspec

from api_gateway.controllers.realizer import fetch
from api_gateway.controllers.workspace_audit import OPERATION_SOURCES
from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import BusReplyError
from contracts import workspace_subjects as subjects
from contracts.base import Principal
from contracts.execution_commands import GetWorkspaceOperation
from contracts.execution_views import WorkspaceOperationDetail
from contracts.workspace_views import Page

__all__ = ["Tail", "newest_rows", "workspace_operation"]

T = TypeVar("T")


@dataclass(frozen=True)
class Tail(Generic[T]):
    """The newest rows of every source, oldest first, and how many rows the sources hold."""

    rows: list[T]
    total: int

    @property
    def cut(self) -> bool:
        """Whether older rows are left out."""
        return self.total > len(self.rows)


async def _source_tail(
    gateway: Gateway,
    subject: str,
    window: Any,
    row: type[T],
) -> tuple[list[T], int]:
    """One source's newest ``window.limit`` rows and its total."""
    timeout = gateway.settings.query_timeout
    answer = await fetch(gateway, subject, window, Page[row], timeout=timeout)  # type: ignore[valid-type]
    if answer.total <= window.limit:
        return list(answer.items), answer.total
    tail = msgspec.structs.replace(window, offset=answer.total - window.limit)
    last = await fetch(gateway, subject, tail, Page[row], timeout=timeout)  # type: ignore[valid-type]
    return list(last.items), max(last.total, answer.total)


async def newest_rows(
    gateway: Gateway,
    subject_of: Callable[[Any], str],
    window: Any,
    row: type[T],
    key: Callable[[T], datetime],
    what: str,
    warnings: list[str],
) -> Tail[T]:
    """The newest ``window.limit`` rows of every source, merged oldest first by ``key``.

    Args:
        gateway: The gateway (its bus and query timeout).
        subject_of: A source's subject (``subjects.workspace_operations``, say).
        window: The source's list query (``limit`` rows; its ``offset`` is set here).
        row: The row type.
        key: The time the rows are ordered by.
        what: The rows' name in a warning ("workspace events").
        warnings: Where a source that did not answer is named.

    Returns:
        The rows and the number of rows all sources hold.

    Raises:
        BusReplyError: The workspace's owner (the realizer) refused (404 for another company's).
    """

    async def ask(source: Any) -> tuple[list[T], int]:
        try:
            return await _source_tail(gateway, subject_of(source), window, row)
        except BusReplyError as exc:
            if source == OPERATION_SOURCES[0]:
                raise
            if exc.reply.code != "not_found":
                warnings.append(f"Some {what} are not shown: {exc.reply.message}")
            return [], 0

    found = await asyncio.gather(*(ask(source) for source in OPERATION_SOURCES))
    merged = sorted((one for rows, _ in found for one in rows), key=key)
    return Tail(rows=merged[-window.limit :], total=sum(total for _, total in found))


async def workspace_operation(
    gateway: Gateway, principal: Principal, operation_id: str
) -> WorkspaceOperationDetail:
    """One workspace operation with its output, from whichever source holds it.

    Raises:
        BusReplyError: No source holds it (``not_found``), or a source failed otherwise.
    """
    query = GetWorkspaceOperation(principal=principal, operation_id=operation_id)
    refusal: BusReplyError | None = None
    for source in OPERATION_SOURCES:
        try:
            return await fetch(
                gateway,
                subjects.workspace_operation(source),
                query,
                WorkspaceOperationDetail,
                timeout=gateway.settings.query_timeout,
            )
        except BusReplyError as exc:
            refusal = refusal if refusal and exc.reply.code == "not_found" else exc
    assert refusal is not None
    raise refusal
