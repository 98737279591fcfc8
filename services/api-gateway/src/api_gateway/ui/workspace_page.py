"""The workspace detail page's data: its sections, the windows of its lists, and
:class:`WorkspacePage`, what the page (or one fragment) renders.

A section that cannot be loaded says so in its place (:func:`load_section`) rather than failing
the page.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Final, TypeVar

from api_gateway.http.errors import BusReplyError
from api_gateway.ui.workspace_commands import (
    ConfigForm,
    ConfiguredCommand,
    InheritedRuntime,
    ServiceRow,
)
from contracts.agents import RunView
from contracts.execution_views import (
    CloseReadiness,
    ExecutionWorkspace,
    WorkspaceEventRow,
    WorkspaceOperation,
    WorkspaceOperationDetail,
)
from contracts.workspace_diff import WorkspaceDiff

__all__ = [
    "EVENT_WINDOW",
    "LOG_TAIL_LINES",
    "OPERATION_WINDOW",
    "RUN_WINDOW",
    "SECTIONS",
    "WorkspacePage",
    "load_section",
]

T = TypeVar("T")

log = logging.getLogger(__name__)

SECTIONS: Final = (
    "summary",
    "readiness",
    "diff",
    "services",
    "jobs",
    "configuration",
    "operations",
    "lifecycle",
    "timeline",
    "runs",
)
"""The page's sections, in page order; each is a ``?fragment=<name>``."""
LOG_TAIL_LINES: Final = 40
EVENT_WINDOW: Final = 1000
"""The timeline shows the newest this many events."""
OPERATION_WINDOW: Final = 200
"""The operations section shows the newest this many operations."""
RUN_WINDOW: Final = 50
"""The runs section asks for at most this many runs of each of the workspace's issues."""


@dataclass
class WorkspacePage:
    """Everything the page (or one fragment) renders; a section not asked for stays empty."""

    workspace_id: str
    workspace: ExecutionWorkspace | None = None
    warnings: list[str] = field(default_factory=list)
    """Sentences saying what could not be loaded (a service that did not answer)."""
    errors: dict[str, str] = field(default_factory=dict)
    """Per section: why it could not be loaded."""
    readiness: CloseReadiness | None = None
    commands: list[ConfiguredCommand] = field(default_factory=list)
    services: list[ServiceRow] = field(default_factory=list)
    logs: dict[str, str] = field(default_factory=dict)
    """Runtime service id → the tail of its log."""
    job_operation: WorkspaceOperationDetail | None = None
    """The job run whose output the "Jobs" section shows."""
    job_runs: dict[str, WorkspaceOperation] = field(default_factory=dict)
    """Job command id → its latest run (a workspace operation)."""
    form: ConfigForm | None = None
    inherited: InheritedRuntime | None = None
    """The project workspace's runtime config, when the workspace has none of its own."""
    operations: list[WorkspaceOperation] = field(default_factory=list)
    """The newest operations, oldest first."""
    operations_total: int = 0
    """How many operations the workspace has in all."""
    events: list[WorkspaceEventRow] = field(default_factory=list)
    """The newest events, oldest first."""
    events_total: int = 0
    """How many events the workspace has in all (of the types asked for)."""
    event_types: str | None = None
    """The timeline's filter as given (``?types=``: types, types without version, aggregates)."""
    runs: list[RunView] = field(default_factory=list)
    agents: dict[str, str] = field(default_factory=dict)
    """Agent id → name, for the timeline's actors and the runs (empty when not looked up)."""
    keys: dict[str, str] = field(default_factory=dict)
    """Board key id → name, for the timeline's actors (empty when not looked up)."""
    diff: WorkspaceDiff | None = None
    """What the workspace changed against its base (the "Changes" section)."""
    diff_path: str | None = None
    """The file whose unified diff the "Changes" section shows (``?diffPath=``)."""
    diff_refused: str | None = None
    """Why the file asked for has no diff (not a file the diff lists); the lists still show."""

    @property
    def jobs(self) -> list[ConfiguredCommand]:
        """The configured jobs."""
        return [one for one in self.commands if one.kind == "job"]


async def load_section(page: WorkspacePage, name: str, load: Awaitable[T]) -> T | None:
    """Await one section's data; a refusal is written into ``page.errors[name]``."""
    try:
        return await load
    except BusReplyError as exc:
        log.warning("workspace page %s, section %s: %s", page.workspace_id, name, exc)
        page.errors[name] = exc.reply.message
        return None
