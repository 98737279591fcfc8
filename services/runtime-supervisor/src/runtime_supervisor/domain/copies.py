"""The supervisor's read-only copies of other services' records (ARCHITECTURE §1): execution
workspaces, project workspaces, projects (their egress allowlist) and issues (realizer), runs
(controller), companies (gateway).

Each copy is an aggregate of the supervisor's own store, fed by its inbox, so that it is rebuilt
from that store (the event stream keeps only 30 days). A copy holds plain fields, written as each
upstream event says; it never decides anything.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal, TypedDict, cast
from uuid import UUID, uuid5

from eventsourcing.domain import event

from runtime_supervisor.domain.base import CompanyScoped

__all__ = ["COPY_KINDS", "CopyCounter", "CopyFields", "CopyKind", "UpstreamCopy", "copy_id"]

CopyKind = Literal["workspace", "project_workspace", "issue", "run", "company", "project"]
COPY_KINDS: Final[tuple[CopyKind, ...]] = (
    "workspace",
    "project_workspace",
    "issue",
    "run",
    "company",
    "project",
)

CopyCounter = Literal["checkout_version"]
"""A field of a copy that upstream events add one to (a rebuilt or reopened worktree)."""


class CopyFields(TypedDict, total=False):
    """The fields a copy holds, as its events store them (each upstream event sets some).

    ``workspace`` (an execution workspace): ``project_id``, ``project_workspace_id``,
    ``source_issue_id``, ``mode``, ``strategy_type``, ``name``, ``status``, ``closing``, ``cwd``,
    ``repo_url``, ``base_ref``, ``branch_name``, ``node_id``, ``config``,
    ``lifecycle_generation``, ``last_used_at``, ``checkout_version``. ``project_workspace``:
    ``project_id``, ``name``, ``cwd``, ``repo_url``, ``repo_ref``, ``is_primary``, ``deleted``,
    ``runtime_config``, ``managed_checkout``. ``project``: ``name``, ``egress_allowlist``,
    ``deleted``. ``issue``: ``project_id``, ``identifier``, ``title``,
    ``project_workspace_id``, ``status``, ``assignee_agent_id``, ``execution_workspace_id``,
    ``deleted``. ``run``: ``agent_id``, ``issue_id``, ``workspace_id``, ``status``,
    ``error_code``. ``company``: ``host_trusted``, ``allowed_roots``.
    """

    project_id: str
    project_workspace_id: str | None
    source_issue_id: str | None
    mode: str
    strategy_type: str
    name: str
    status: str
    closing: bool
    cwd: str | None
    repo_url: str | None
    base_ref: str | None
    branch_name: str | None
    node_id: str | None
    config: Any
    """The workspace's ``ExecutionWorkspaceConfig`` in its plain (camelCase) form, or None."""
    lifecycle_generation: int
    last_used_at: datetime | None
    checkout_version: int
    repo_ref: str | None
    is_primary: bool
    deleted: bool
    runtime_config: Any
    """The project workspace's ``RuntimeConfig`` in its plain form, or None."""
    managed_checkout: Any
    """The project workspace's managed checkout in its plain form, or None."""
    egress_allowlist: Any
    """The project's egress allowlist (``[{host, port}]``) in its plain form."""
    identifier: str
    title: str
    assignee_agent_id: str | None
    execution_workspace_id: str | None
    agent_id: str
    issue_id: str | None
    workspace_id: str | None
    error_code: str | None
    host_trusted: bool
    allowed_roots: list[str]


_NAMESPACE: Final = UUID("5b0f7a2e-3c1d-5e4f-8a9b-1c2d3e4f5a6b")
_MISSING: Final = object()


def copy_id(kind: CopyKind, key: str) -> UUID:
    """The id of the copy of ``kind`` ``key`` (a UUID5, the same on every node and rebuild)."""
    return uuid5(_NAMESPACE, f"{kind}:{key}")


class UpstreamCopy(CompanyScoped):
    """The copy of one upstream record: ``kind``, ``key`` (its id upstream), ``company_id`` and
    ``fields`` (plain data: strings, numbers, lists, dicts, times)."""

    @staticmethod
    def create_id(kind: CopyKind, key: str) -> UUID:
        """One copy per upstream record."""
        return copy_id(kind, key)

    @event("Copied")
    def __init__(
        self, *, kind: CopyKind, key: str, company_id: str | None, fields: CopyFields
    ) -> None:
        self.kind = kind
        self.key = key
        self.company_id = company_id  # type: ignore[assignment]
        self.fields: CopyFields = fields.copy()

    def note(self, fields: CopyFields) -> bool:
        """Record the fields that differ from the copy's; return whether any did."""
        changes = cast(
            "CopyFields", {k: v for k, v in fields.items() if self.fields.get(k, _MISSING) != v}
        )
        if not changes:
            return False
        self._updated(changes=changes)
        return True

    @event("Updated")
    def _updated(self, changes: CopyFields) -> None:
        self.fields = {**self.fields, **changes}

    def get(self, name: str, default: Any = None) -> Any:
        """One field of the copy (``default`` when the upstream never said)."""
        return self.fields.get(name, default)
