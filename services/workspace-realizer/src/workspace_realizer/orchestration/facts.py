"""What close readiness, archive, the reaper and detail reads know about a workspace: stored facts
gathered on the store's thread, then git inspection and pull-request evidence off it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from workspace_realizer.adapters.repository import worktree_repository
from workspace_realizer.domain.host.delivery import derive_delivery, pull_request_evidence
from workspace_realizer.domain.host.readiness import (
    CloseContext,
    LinkedIssueFacts,
    Readiness,
    close_readiness,
)
from workspace_realizer.domain.policy import parse_policy
from workspace_realizer.usecases.host.planning import (
    BaseCheckout,
    WorkspaceSnapshot,
    base_checkout,
    protected_paths,
    snapshot,
)

if TYPE_CHECKING:
    from servicekit.access import Access
    from workspace_realizer.adapters.ports import GitInspection
    from workspace_realizer.application import WorkspaceRealizerApplication
    from workspace_realizer.domain.documents import WorkProductRecord
    from workspace_realizer.orchestration.context import Realizer

__all__ = ["CloseFacts", "Delivery", "assess", "gather", "inspect"]


@dataclass(frozen=True)
class CloseFacts:
    """The stored facts about a workspace that its git state is judged with."""

    workspace: WorkspaceSnapshot
    base: BaseCheckout | None
    linked: list[LinkedIssueFacts]
    work_products: list[WorkProductRecord]
    source_terminal: bool
    protected: list[str]
    policy_teardown: str | None

    @cached_property
    def repo_root(self) -> Path | None:
        """The repository the worktree belongs to: read from the worktree itself while it exists
        (the project workspace's cwd may have changed since), else its base checkout, else the
        worktree. Taken once (before a removal) and kept."""
        ws = self.workspace
        if ws.is_worktree and ws.path:
            own = worktree_repository(Path(ws.path))
            if own is not None:
                return own
        root = (self.base.cwd or self.base.checkout_path) if self.base else None
        root = root or ws.path
        return Path(root) if root else None


@dataclass(frozen=True)
class Delivery:
    """The git inspection and the delivery state derived from it."""

    inspection: GitInspection | None
    state: str
    commits_ahead: int | None


def gather(app: WorkspaceRealizerApplication, access: Access, workspace_id: str) -> CloseFacts:
    """Collect the stored facts (store thread; checks the principal may see the workspace)."""
    workspace = app.workspace_of(access, workspace_id)
    base = app.project_workspaces.get(workspace.project_workspace_id or "")
    source = app.issues.get(workspace.source_issue_id)
    project = app.projects.get(workspace.project_id)
    strategy = parse_policy(project.policy if project else None).strategy
    linked = [
        LinkedIssueFacts(str(i.id), i.identifier, i.title, i.status, i.terminal)
        for i in app.issues_linked_to(workspace)
    ]
    return CloseFacts(
        workspace=snapshot(workspace),
        base=base_checkout(base) if base is not None else None,
        linked=linked,
        work_products=list(source.work_products) if source else [],
        source_terminal=source is None or source.deleted or source.terminal,
        protected=protected_paths(app),
        policy_teardown=strategy.teardown_command if strategy else None,
    )


async def inspect(ctx: Realizer, facts: CloseFacts) -> Delivery:
    """Inspect the worktree and derive its delivery state (git only for worktrees)."""
    ws = facts.workspace
    if not ws.is_worktree or not ws.path or facts.repo_root is None:
        return Delivery(None, "unknown", None)
    inspection = await ctx.ports.git.inspect(
        repo_root=facts.repo_root, path=Path(ws.path), branch=ws.branch_name, base_ref=ws.base_ref
    )
    pr = await pull_request_evidence(
        ctx.ports.pull_requests,
        company_id=ws.company_id,
        repo_url=ws.repo_url,
        work_products=facts.work_products,
        source_terminal=facts.source_terminal,
        branch=ws.branch_name,
        head_sha=inspection.head_sha,
    )
    usable = inspection.exists and inspection.readable
    state, ahead = derive_delivery(
        inspection.delivery if usable else None, source_terminal=facts.source_terminal, pr=pr
    )
    return Delivery(inspection, state, ahead)


def close_commands(facts: CloseFacts) -> list[tuple[str, str, str]]:
    """The cleanup and teardown commands archive runs, in order (reference §5.7)."""
    config = facts.workspace.config
    commands = [
        ("cleanup_command", "Workspace cleanup command", config.get("cleanupCommand")),
        (
            "cleanup_command",
            "Project workspace cleanup command",
            facts.base.cleanup_command if facts.base else None,
        ),
        (
            "teardown_command",
            "Teardown command",
            config.get("teardownCommand") or facts.policy_teardown,
        ),
    ]
    return [(kind, label, command) for kind, label, command in commands if command]


async def assess(ctx: Realizer, facts: CloseFacts) -> tuple[Readiness, Delivery, CloseContext]:
    """Inspect, then judge close readiness."""
    delivery = await inspect(ctx, facts)
    ws = facts.workspace
    context = CloseContext(
        workspace_id=ws.id,
        mode=ws.mode,
        is_worktree=ws.is_worktree,
        path=ws.path,
        branch_name=ws.branch_name,
        base_ref=ws.base_ref,
        branch_created=ws.branch_created,
        next_generation=ws.generation + 1,
        inspection=delivery.inspection,
        linked=facts.linked,
        delivery_state=delivery.state,
        commits_ahead=delivery.commits_ahead,
        commands=close_commands(facts),
    )
    return close_readiness(context), delivery, context
