"""What the issue page shows: the issue, its workspace mode selector and its current workspace.

The selector follows Paperclip's ``ui/src/lib/project-workspaces-tab.ts`` (modes: reference §2
``ExecutionWorkspaceMode``): the project's default (``inherit``, labelled with the project's
default mode), shared, isolated, operator branch, and, per project workspace, the open
execution workspaces that may be reused (``GET /api/companies/{companyId}/execution-workspaces?
projectId=..&reuseEligible=true``), as ``reuse:<executionWorkspaceId>``. A workspace whose
company is ``hostTrusted`` (it runs unconfined on the host) says so, in its option and as the
current workspace.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Final

from api_gateway.controllers.realizer import fetch
from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import BusReplyError
from contracts import workspace_subjects as subjects
from contracts.base import Principal
from contracts.execution_commands import (
    GetExecutionWorkspace,
    ListExecutionWorkspaces,
    WorkspaceFilters,
)
from contracts.execution_views import ExecutionWorkspace, ExecutionWorkspaceRow
from contracts.workspace_commands import GetIssue, GetProject, ListProjectWorkspaces
from contracts.workspace_views import Issue, Page, Project, ProjectWorkspace

__all__ = [
    "MODE_LABELS",
    "UNCONFINED_SUFFIX",
    "IssuePage",
    "ModeOption",
    "OptionGroup",
    "load_issue_page",
    "mode_options",
    "selected_value",
]

log = logging.getLogger(__name__)

MODE_LABELS: Final = {
    "shared_workspace": "Shared workspace",
    "isolated_workspace": "Isolated workspace",
    "operator_branch": "Operator branch",
    "adapter_default": "Adapter default",
    "agent_default": "Agent default",
}
"""How a mode reads on the page."""
UNCONFINED_SUFFIX: Final = " — unconfined"
"""Added to the label of a reusable workspace whose company is ``hostTrusted`` (its commands run
unconfined on the host; docs/design/isolation.md)."""
_FIXED_MODES: Final = ("shared_workspace", "isolated_workspace", "operator_branch")
_REUSE_WINDOW: Final = 200


@dataclass(frozen=True)
class ModeOption:
    """One ``<option>``: its value (a mode, or ``reuse:<id>``) and label."""

    value: str
    label: str


@dataclass(frozen=True)
class OptionGroup:
    """An ``<optgroup>`` of reusable workspaces of one project workspace."""

    label: str
    options: list[ModeOption]


@dataclass
class IssuePage:
    """The issue page's data."""

    issue: Issue
    project: Project | None = None
    options: list[ModeOption] = field(default_factory=list)
    groups: list[OptionGroup] = field(default_factory=list)
    selected: str = "inherit"
    workspace: ExecutionWorkspace | None = None
    errors: list[str] = field(default_factory=list)


def selected_value(issue: Issue) -> str:
    """The option the issue's settings select: ``inherit`` without an override,
    ``reuse:<id>`` for ``reuse_existing``, else the mode."""
    settings = issue.execution_workspace_settings
    if settings is None or settings.mode == "inherit":
        return "inherit"
    if settings.mode == "reuse_existing":
        return f"reuse:{settings.execution_workspace_id or ''}"
    return settings.mode


def mode_options(
    project: Project | None,
    project_workspaces: list[ProjectWorkspace],
    reusable: list[ExecutionWorkspaceRow],
    selected: str,
    current: ExecutionWorkspace | None = None,
) -> tuple[list[ModeOption], list[OptionGroup]]:
    """The selector's options and groups.

    Args:
        project: The issue's project (its default mode labels ``inherit``).
        project_workspaces: The project's workspaces (one group each with reusable ones).
        reusable: The project's reuse-eligible execution workspaces.
        selected: The selected value (an option is added when nothing else carries it).
        current: The issue's workspace, to name a selected ``reuse:`` value no group lists.

    Returns:
        The plain options, then the ``Reuse existing — <name>`` groups.
    """
    default = project.execution_workspace_policy.default_mode if project else None
    default_label = MODE_LABELS.get(default or "", default or "unknown")
    options = [ModeOption("inherit", f"Project default ({default_label})")]
    options += [ModeOption(mode, MODE_LABELS[mode]) for mode in _FIXED_MODES]
    if selected == "agent_default":
        options.append(ModeOption("agent_default", MODE_LABELS["agent_default"]))
    names = {one.id: one.name for one in project_workspaces}
    by_parent: dict[str, list[ModeOption]] = {}
    for row in reusable:
        parent = row.project_workspace_id or ""
        label = f"{row.name} ({row.branch_name})" if row.branch_name else row.name
        if row.unconfined:
            label += UNCONFINED_SUFFIX
        by_parent.setdefault(parent, []).append(ModeOption(f"reuse:{row.id}", label))
    order = [one.id for one in project_workspaces] + [k for k in by_parent if k not in names]
    groups = [
        OptionGroup(f"Reuse existing — {names.get(parent) or 'other'}", by_parent[parent])
        for parent in order
        if parent in by_parent
    ]
    listed = {one.value for one in options} | {o.value for g in groups for o in g.options}
    if selected.startswith("reuse:") and selected not in listed:
        target = selected.removeprefix("reuse:")
        name = current.name if current is not None and current.id == target else target
        if current is not None and current.id == target and current.unconfined:
            name += UNCONFINED_SUFFIX
        options.append(ModeOption(selected, f"Reuse existing — {name}"))
    return options, groups


async def load_issue_page(gateway: Gateway, principal: Principal, issue_id: str) -> IssuePage:
    """Load the issue page: the issue (its refusal is the answer), then its project, project
    workspaces, reusable workspaces and current workspace (each may fail alone: said in
    ``errors``).

    Raises:
        BusReplyError: The issue could not be read (404 for another company's).
    """
    issue = await fetch(
        gateway, subjects.ISSUE_GET, GetIssue(principal=principal, issue_id=issue_id), Issue
    )
    page = IssuePage(issue=issue, selected=selected_value(issue))
    timeout = gateway.settings.query_timeout
    reuse = ListExecutionWorkspaces(
        principal=principal,
        company_id=issue.company_id,
        filters=WorkspaceFilters(project_id=issue.project_id, reuse_eligible=True),
        limit=_REUSE_WINDOW,
    )
    answers = await asyncio.gather(
        fetch(
            gateway,
            subjects.PROJECT_GET,
            GetProject(principal=principal, project_id=issue.project_id),
            Project,
        ),
        fetch(
            gateway,
            subjects.PROJECT_WORKSPACE_LIST,
            ListProjectWorkspaces(principal=principal, project_id=issue.project_id, limit=200),
            Page[ProjectWorkspace],
            timeout=timeout,
        ),
        fetch(
            gateway, subjects.WORKSPACE_LIST, reuse, Page[ExecutionWorkspaceRow], timeout=timeout
        ),
        _current(gateway, principal, issue),
        return_exceptions=True,
    )
    project, project_workspaces, reusable, current = answers
    for answer in answers:
        if isinstance(answer, BusReplyError):
            log.warning("issue page %s: %s", issue_id, answer)
            page.errors.append(answer.reply.message)
        elif isinstance(answer, BaseException):
            raise answer
    page.project = project if isinstance(project, Project) else None
    page.workspace = current if isinstance(current, ExecutionWorkspace) else None
    page.options, page.groups = mode_options(
        page.project,
        list(project_workspaces.items) if isinstance(project_workspaces, Page) else [],
        list(reusable.items) if isinstance(reusable, Page) else [],
        page.selected,
        page.workspace,
    )
    return page


async def _current(
    gateway: Gateway, principal: Principal, issue: Issue
) -> ExecutionWorkspace | None:
    if issue.execution_workspace_id is None:
        return None
    query = GetExecutionWorkspace(principal=principal, workspace_id=issue.execution_workspace_id)
    return await fetch(gateway, subjects.WORKSPACE_GET, query, ExecutionWorkspace)
