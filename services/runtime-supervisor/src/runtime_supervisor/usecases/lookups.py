"""Lookups in the supervisor's copies of other services' facts, scoped to the asking company
(``None``: the supervisor itself or a system caller, which sees everything): targets, issues and
runs; and what of them an agent key or a run token may reach (ARCHITECTURE §5.1): an agent key
the workspaces of the issues assigned to its agent, a run token those of its run's issue and the
one its run holds, and the runtime services and operations of those. A
project workspace is an agent's only through a *shared* workspace of its own on it (the project's
checkout itself; for a run token, the one its run holds), the rule of runtime control
(``control.holding_run``): an isolated worktree gives no reach to the checkout the others
share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

import msgspec

from contracts.workspace_config import ExecutionWorkspaceConfig, RuntimeConfig
from runtime_supervisor.domain import (
    InvalidInputError,
    IssueBrief,
    NotFoundError,
    RunBrief,
    RuntimeTarget,
    UpstreamCopy,
    target_key,
)
from runtime_supervisor.readmodels import SupervisorReadModels
from servicekit.access import AccessDeniedError

if TYPE_CHECKING:
    from runtime_supervisor.domain import SupervisorOperation
    from servicekit.access import Access

__all__ = ["Lookups", "visible"]


def _convert(value: Any, kind: type[Any]) -> Any:
    return None if value is None else msgspec.convert(value, kind)


def visible(company_id: str | None, scope_company_id: str | None) -> bool:
    """Whether a record of ``company_id`` may be shown to ``scope_company_id`` (None: all)."""
    return scope_company_id is None or company_id == scope_company_id


class Lookups(SupervisorReadModels):
    """Targets, issues and runs as the supervisor's copies say."""

    def load(self, ident: str | UUID) -> Any:
        """The aggregate with this id, from the repository (for a use case to change)."""
        return self.repository.get(ident if isinstance(ident, UUID) else UUID(ident))

    def target(
        self,
        scope_company_id: str | None,
        workspace_id: str | None = None,
        project_workspace_id: str | None = None,
    ) -> RuntimeTarget:
        """The execution workspace or project workspace named (exactly one of them).

        Raises:
            InvalidInputError: Both or neither is named.
            NotFoundError: Unknown, deleted, or another company's.
        """
        if (workspace_id is None) == (project_workspace_id is None):
            raise InvalidInputError(
                "Name exactly one of workspaceId and projectWorkspaceId.", field="workspaceId"
            )
        if workspace_id is not None:
            return self._execution_target(scope_company_id, workspace_id)
        assert project_workspace_id is not None
        return self._project_target(scope_company_id, project_workspace_id)

    def current(self, target: RuntimeTarget) -> RuntimeTarget:
        """The target as the copies say now (the caller's may be a few awaits old)."""
        if target.kind == "execution_workspace":
            return self.target(None, workspace_id=target.id)
        return self.target(None, project_workspace_id=target.id)

    def _execution_target(self, scope: str | None, workspace_id: str) -> RuntimeTarget:
        ws = self.copy_of("workspace", workspace_id)
        if ws is None or not ws.company_id or not visible(ws.company_id, scope):
            raise NotFoundError(
                f"There is no execution workspace {workspace_id}.", workspaceId=workspace_id
            )
        pw = self._live_project_workspace(ws.get("project_workspace_id"))
        config: ExecutionWorkspaceConfig | None = _convert(
            ws.get("config"), ExecutionWorkspaceConfig
        )
        return RuntimeTarget(
            kind="execution_workspace",
            key=target_key("execution_workspace", workspace_id),
            company_id=ws.company_id,
            execution_workspace_id=workspace_id,
            project_workspace_id=ws.get("project_workspace_id"),
            project_id=ws.get("project_id"),
            name=ws.get("name"),
            mode=ws.get("mode"),
            status=ws.get("status"),
            closing=bool(ws.get("closing", False)),
            cwd=ws.get("cwd"),
            node_id=ws.get("node_id"),
            repo_url=ws.get("repo_url"),
            base_ref=ws.get("base_ref"),
            branch_name=ws.get("branch_name"),
            lifecycle_generation=int(ws.get("lifecycle_generation", 0)),
            checkout_version=int(ws.get("checkout_version", 0)),
            source_issue=self.issue(scope, ws.get("source_issue_id")),
            workspace_config=config,
            own_runtime=config.workspace_runtime if config is not None else None,
            project_runtime=_convert(pw.get("runtime_config"), RuntimeConfig) if pw else None,
            runtime_provision_command=config.runtime_provision_command if config else None,
            project_workspace_cwd=_checkout_path(pw) if pw else None,
        )

    def _project_target(self, scope: str | None, project_workspace_id: str) -> RuntimeTarget:
        pw = self._live_project_workspace(project_workspace_id)
        if pw is None or not pw.company_id or not visible(pw.company_id, scope):
            raise NotFoundError(
                f"There is no project workspace {project_workspace_id}.",
                projectWorkspaceId=project_workspace_id,
            )
        cwd = _checkout_path(pw)
        return RuntimeTarget(
            kind="project_workspace",
            key=target_key("project_workspace", project_workspace_id),
            company_id=pw.company_id,
            execution_workspace_id=None,
            project_workspace_id=project_workspace_id,
            project_id=pw.get("project_id"),
            name=pw.get("name"),
            mode=None,
            status=None,
            closing=False,
            cwd=cwd,
            node_id=pw.get("node_id"),
            repo_url=pw.get("repo_url"),
            base_ref=pw.get("repo_ref"),
            branch_name=None,
            lifecycle_generation=0,
            checkout_version=0,
            source_issue=None,
            workspace_config=None,
            own_runtime=_convert(pw.get("runtime_config"), RuntimeConfig),
            project_runtime=None,
            runtime_provision_command=None,
            project_workspace_cwd=cwd,
        )

    def _live_project_workspace(self, project_workspace_id: str | None) -> UpstreamCopy | None:
        pw = self.copy_of("project_workspace", project_workspace_id)
        return pw if pw is not None and not pw.get("deleted", False) else None

    def issue(self, scope_company_id: str | None, issue_id: str | None) -> IssueBrief | None:
        """An issue as the realizer last said (None: unknown, or another company's)."""
        found = self.copy_of("issue", issue_id)
        if found is None or issue_id is None or not visible(found.company_id, scope_company_id):
            return None
        return IssueBrief(
            id=issue_id,
            company_id=found.company_id,
            identifier=found.get("identifier"),
            title=found.get("title"),
            status=found.get("status"),
            deleted=bool(found.get("deleted", False)),
        )

    def run(self, scope_company_id: str | None, run_id: str | None) -> RunBrief | None:
        """A run as the controller last said (None: unknown, or another company's)."""
        found = self.copy_of("run", run_id)
        if found is None or run_id is None or not visible(found.company_id, scope_company_id):
            return None
        return RunBrief(
            id=run_id,
            company_id=found.company_id,
            status=found.get("status", "running"),
            agent_id=found.get("agent_id"),
            issue_id=found.get("issue_id"),
            workspace_id=found.get("workspace_id"),
            error_code=found.get("error_code"),
        )

    def runs_holding(self, workspace_id: str) -> list[RunBrief]:
        """The runs that started on the workspace and have not finished."""
        return [
            brief
            for key, found in self.copies["run"].items()
            if found.get("workspace_id") == workspace_id
            and (brief := self.run(None, key)) is not None
            and not brief.terminal
        ]

    # -- what an agent reaches (OWN reach) ------------------------------------------------------

    def owns_workspace(self, access: Access, workspace_id: str | None) -> bool:
        """Whether the execution workspace is the actor's: the board's always; an agent's when
        an issue linked to it (its source issue, or one whose current workspace it is) is the
        agent's (``Access.owns_issue``), or, for a run token, when its run holds it."""
        if not access.is_agent:
            return True
        if workspace_id is None:
            return False
        if access.holds([run.id for run in self.runs_holding(workspace_id)]):
            return True
        workspace = self.copy_of("workspace", workspace_id)
        linked = {workspace.get("source_issue_id")} if workspace is not None else set()
        linked |= self.issues_by_workspace.get(workspace_id, set())
        return any(self._owns_issue(access, issue_id) for issue_id in linked if issue_id)

    def owns_target(self, access: Access, target: RuntimeTarget) -> bool:
        """Whether the target's runtime is the actor's: an execution workspace it owns
        (:meth:`owns_workspace`); a project workspace it shares
        (:meth:`owns_project_workspace`)."""
        if target.kind == "execution_workspace":
            return self.owns_workspace(access, target.execution_workspace_id)
        return self.owns_project_workspace(access, target.project_workspace_id)

    def check_target(self, access: Access, target: RuntimeTarget, action: str) -> None:
        """Raise ``AccessDeniedError`` (403) when an agent reaches a workspace not its own.

        Args:
            access: Who asks.
            target: The workspace (already known to be of the actor's company).
            action: What it wanted, for the message (``read the logs of``).
        """
        if self.owns_target(access, target):
            return
        if target.kind == "execution_workspace":
            what = f"execution workspace {target.id} is not one of them"
        else:
            what = (
                f"project workspace {target.id} is one only for an agent working in its shared "
                "checkout (a workspace of mode shared_workspace), not from an isolated worktree"
            )
        raise AccessDeniedError(
            f"An agent can only {action} the runtime services of its own issues' workspaces "
            f"(a run token: of its run's issue, or the workspace its run holds); {what}.",
            workspaceId=target.execution_workspace_id,
            projectWorkspaceId=target.project_workspace_id,
        )

    def owns_operation(self, access: Access, operation: SupervisorOperation) -> bool:
        """Whether a workspace operation is the actor's: made for one of its runs, for one of its
        issues, or against a workspace of its own (a project workspace's only when it shares it:
        :meth:`owns_project_workspace`)."""
        if not access.is_agent:
            return True
        run = self.run(None, operation.run_id)
        if run is not None and access.owns_run(run.id, run.agent_id):
            return True
        if operation.issue_id is not None and self._owns_issue(access, operation.issue_id):
            return True
        if operation.execution_workspace_id is not None:
            return self.owns_workspace(access, operation.execution_workspace_id)
        return self.owns_project_workspace(access, operation.project_workspace_id)

    def owns_project_workspace(self, access: Access, project_workspace_id: str | None) -> bool:
        """Whether a project workspace's runtime (its services, logs and operations) is the
        actor's, by the rule of runtime control (``control.holding_run``): the board's always;
        an agent key's through one of its own workspaces (:meth:`owns_workspace`) on that
        project workspace in mode ``shared_workspace`` (the project's checkout itself); a run
        token's only when the workspace its run holds is such a shared one. An isolated
        worktree of the project gives no reach to the checkout the other issues share."""
        if not access.is_agent:
            return True
        if project_workspace_id is None:
            return False
        if access.is_run_token:
            run = self.run(access.company_id, access.run_id)
            held = run.workspace_id if run is not None and not run.terminal else None
            return held is not None and self._shares(held, project_workspace_id)
        return any(
            self._shares(key, project_workspace_id) and self.owns_workspace(access, key)
            for key in self.copies["workspace"]
        )

    def _shares(self, workspace_id: str, project_workspace_id: str) -> bool:
        """Whether the execution workspace is the project workspace's checkout itself (mode
        ``shared_workspace`` on it)."""
        workspace = self.copy_of("workspace", workspace_id)
        return (
            workspace is not None
            and workspace.get("project_workspace_id") == project_workspace_id
            and workspace.get("mode") == "shared_workspace"
        )

    def _owns_issue(self, access: Access, issue_id: str) -> bool:
        """``Access.owns_issue`` with the assignee the copies know (none for an issue not copied
        yet or deleted: then only the run's own issue is the actor's)."""
        issue = self.copy_of("issue", issue_id)
        live = issue is not None and not issue.get("deleted", False)
        assignee = issue.get("assignee_agent_id") if live and issue is not None else None
        return access.owns_issue(issue_id, assignee)

    def issue_status(self, issue_id: str) -> str | None:
        """An issue's status for the lease rule (None: unknown or deleted)."""
        found = self.copy_of("issue", issue_id)
        if found is None or found.get("deleted", False):
            return None
        status: str | None = found.get("status")
        return status

    def run_status(self, run_id: str) -> str | None:
        """A run's status for the lease rule (None: unknown)."""
        found = self.copy_of("run", run_id)
        status: str | None = found.get("status") if found is not None else None
        return status


def _checkout_path(pw: UpstreamCopy) -> str | None:
    """A project workspace's local path: its ``cwd``, else its managed clone's when ready."""
    if pw.get("cwd"):
        return str(pw.get("cwd"))
    checkout = pw.get("managed_checkout") or {}
    return checkout.get("path") if checkout.get("state") == "ready" else None
