"""Use cases of companies (the gateway's copy), projects and project workspaces."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from workspace_realizer.domain import CompanyCopy, Project, ProjectWorkspace
from workspace_realizer.domain.errors import DependentsError, InvalidInputError
from workspace_realizer.domain.policy import check_policy_strategy
from workspace_realizer.domain.sources import check_repo_ref
from workspace_realizer.usecases.ports import WORKTREE_PARENT_SETTING
from workspace_realizer.usecases.queries import Queries

if TYPE_CHECKING:
    from eventsourcing.persistence import Tracking

    from servicekit.access import Access
    from workspace_realizer.domain.documents import (
        PolicyDocument,
        ProjectWorkspaceFields,
        RuntimeConfigDocument,
    )

__all__ = ["CatalogUseCases"]


class CatalogUseCases(Queries):
    """Companies' prefixes, projects, project workspaces and their managed checkouts."""

    def register_company(
        self, company_id: str, name: str, issue_prefix: str, tracking: Tracking
    ) -> None:
        """Keep the company's issue prefix (from ``company.created.v1``), with the inbox position."""
        if self.company_copy(company_id) is not None:
            self.save_with_tracking(tracking=tracking)
            return
        copy = CompanyCopy(company_id=company_id, name=name, issue_prefix=issue_prefix)
        self.save_with_tracking(copy, tracking=tracking)

    def register_host_access(
        self, company_id: str, host_trusted: bool, allowed_roots: list[str], tracking: Tracking
    ) -> None:
        """Keep what an admin let the company use of the host
        (``company.host_access_changed.v1``), with the inbox position."""
        known = self.company_copy(company_id)
        if known is None:
            self.save_with_tracking(tracking=tracking)
            return
        # Changed as loaded from the store: the read model's own object takes the event when
        # it is projected (changing that one in place made every projection of it fail).
        copy: CompanyCopy = self.load(str(known.id))
        copy.note_host_access(host_trusted=host_trusted, allowed_roots=allowed_roots)
        self.save_with_tracking(copy, tracking=tracking)

    # -- projects --------------------------------------------------------------------------

    def create_project(
        self, access: Access, company_id: str, name: str, policy: PolicyDocument | None
    ) -> Project:
        """Create a project in the principal's company."""
        access.check_company(company_id, "company", company_id)
        access.check_board("create projects")
        self._check_policy(company_id, None, policy)
        project = Project.create(company_id=company_id, name=name, policy=policy)
        self.save(project)
        return self.projects[str(project.id)]

    def update_project(
        self, access: Access, project_id: str, name: str | None, policy: PolicyDocument | None
    ) -> Project:
        """Rename a project and/or replace its policy (None: unchanged)."""
        current = self.project_of(access, project_id)
        access.check_board("change projects")
        if policy is not None:
            self._check_policy(current.company_id, project_id, policy)
        project: Project = self.load(project_id)
        project.revise(name=name, policy=policy)
        self.save(project)
        return self.projects[project_id]

    def delete_project(self, access: Access, project_id: str) -> None:
        """Delete a project that has no project workspaces, no open execution workspaces and no
        open (non-terminal) issues."""
        current = self.project_of(access, project_id)
        access.check_board("delete projects")
        self.check_no_dependents(company_id=current.company_id, project_id=project_id)
        for issue in self.issues.values():
            if issue.project_id == project_id and not issue.deleted and not issue.terminal:
                raise DependentsError(
                    f"The issue {issue.identifier} of this project is still open; finish, cancel "
                    "or delete it first.",
                    issueId=str(issue.id),
                )
        if any(
            not pw.deleted and pw.project_id == project_id
            for pw in self.project_workspaces.values()
        ):
            raise DependentsError(
                "This project still has project workspaces; delete them first.",
                projectId=project_id,
            )
        project: Project = self.load(project_id)
        project.delete()
        self.save(project)

    # -- project workspaces ----------------------------------------------------------------

    def create_project_workspace(
        self,
        access: Access,
        project_id: str,
        fields: ProjectWorkspaceFields,
        runtime_config: RuntimeConfigDocument | None,
        node_id: str | None = None,
    ) -> ProjectWorkspace:
        """Add a project workspace (its runtime config validated) on ``node_id``, the node whose
        host part checked its source; a primary one clears siblings."""
        project = self.project_of(access, project_id)
        access.check_board("add project workspaces")
        self.host_paths.check_source(
            fields.get("cwd"), fields.get("repo_url"), self.host_grant(project.company_id)
        )
        check_repo_ref(fields.get("repo_ref"))
        workspace = ProjectWorkspace.create(
            company_id=project.company_id,
            project_id=project_id,
            fields=fields,
            runtime_config=runtime_config,
            node_id=node_id,
        )
        siblings = self._clear_primary(project_id, str(workspace.id), workspace.is_primary)
        self.save(workspace, *siblings)
        return self.project_workspaces[str(workspace.id)]

    def update_project_workspace(
        self,
        access: Access,
        project_id: str,
        workspace_id: str,
        changes: ProjectWorkspaceFields,
        runtime_config: tuple[RuntimeConfigDocument | None] | None = None,
    ) -> ProjectWorkspace:
        """Change a project workspace; ``runtime_config`` is a 1-tuple when it is to be replaced."""
        found = self.project_workspace_of(access, project_id, workspace_id)
        access.check_board("change project workspaces")
        if "cwd" in changes or "repo_url" in changes:
            self.host_paths.check_source(
                changes.get("cwd"), changes.get("repo_url"), self.host_grant(found.company_id)
            )
        if "repo_ref" in changes:
            check_repo_ref(changes.get("repo_ref"))
        workspace: ProjectWorkspace = self.load(workspace_id)
        workspace.revise(changes)
        if runtime_config is not None:
            workspace.change_runtime_config(runtime_config[0])
        became_primary = workspace.is_primary and "isPrimary" in _changed(workspace)
        siblings = self._clear_primary(project_id, workspace_id, became_primary)
        self.save(workspace, *siblings)
        return self.project_workspaces[workspace_id]

    def delete_project_workspace(self, access: Access, project_id: str, workspace_id: str) -> None:
        """Delete the record (never the directory) when no open execution workspace uses it."""
        found = self.project_workspace_of(access, project_id, workspace_id)
        access.check_board("delete project workspaces")
        self.check_no_dependents(company_id=found.company_id, project_workspace_id=workspace_id)
        workspace: ProjectWorkspace = self.load(workspace_id)
        workspace.delete()
        self.save(workspace)

    def start_checkout(self, workspace_id: str, path: str, operation_id: str | None) -> None:
        """Record that a managed clone into ``path`` begins."""
        workspace: ProjectWorkspace = self.load(workspace_id)
        workspace.start_checkout(path, operation_id)
        self.save(workspace)

    def finish_checkout(
        self, workspace_id: str, path: str, head_sha: str, branch: str | None
    ) -> ProjectWorkspace:
        """Record that the managed checkout is ready."""
        workspace: ProjectWorkspace = self.load(workspace_id)
        workspace.finish_checkout(path, head_sha, branch)
        self.save(workspace)
        return self.project_workspaces[workspace_id]

    def fail_checkout(self, workspace_id: str, error: str) -> None:
        """Record that the managed clone failed."""
        workspace: ProjectWorkspace = self.load(workspace_id)
        workspace.fail_checkout(error)
        self.save(workspace)

    # -- helpers ---------------------------------------------------------------------------

    def check_no_dependents(self, **match: str) -> None:
        """Raise ``DependentsError`` while an open (or closing) workspace matches ``match`` (give
        ``company_id`` too: another company's workspace is never a dependent, nor named)."""
        for workspace in self.workspaces.values():
            if (workspace.is_open or workspace.closing) and all(
                getattr(workspace, key) == value for key, value in match.items()
            ):
                raise DependentsError(
                    f"The open execution workspace {workspace.id} still depends on it; archive "
                    "it first.",
                    executionWorkspaceId=str(workspace.id),
                )

    def _check_policy(
        self, company_id: str, project_id: str | None, policy: PolicyDocument | None
    ) -> None:
        """Refuse a policy whose default project workspace is not a live one of this project, or
        whose worktree parent cannot be resolved.

        Raises:
            InvalidInputError: Naming the field.
        """
        if not policy:
            return
        default = policy.get("defaultProjectWorkspaceId")
        if default:
            found = self.project_workspaces.get(str(default))
            if (
                found is None
                or found.deleted
                or found.company_id != company_id
                or project_id is None
                or found.project_id != project_id
            ):
                raise InvalidInputError(
                    f"defaultProjectWorkspaceId {default} is not a project workspace of this "
                    "project; add the workspace to the project first, then name it.",
                    field="executionWorkspacePolicy.defaultProjectWorkspaceId",
                )
        strategy = policy.get("workspaceStrategy")
        check_policy_strategy(strategy)
        if isinstance(strategy, Mapping):
            check_repo_ref(
                strategy.get("baseRef"), "executionWorkspacePolicy.workspaceStrategy.baseRef"
            )
            self.host_paths.check_worktree_parent_dir(
                strategy.get("worktreeParentDir"),
                self.host_grant(company_id),
                WORKTREE_PARENT_SETTING,
            )

    def _clear_primary(self, project_id: str, keep: str, primary: bool) -> list[ProjectWorkspace]:
        """Siblings that lose their primary flag because ``keep`` became the primary one."""
        if not primary:
            return []
        cleared = []
        for other in list(self.project_workspaces.values()):
            if other.project_id != project_id or str(other.id) == keep:
                continue
            if other.is_primary and not other.deleted:
                sibling: ProjectWorkspace = self.load(str(other.id))
                sibling.revise({"is_primary": False})
                cleared.append(sibling)
        return cleared


def _changed(workspace: ProjectWorkspace) -> list[str]:
    fields: list[str] = []
    for pending in workspace.pending_events:
        fields += getattr(pending, "changed_fields", [])
    return fields
