"""Project workspaces: the codebase roots worktrees branch from (reference §1.2), their runtime
config (the commands the supervisor runs) and, for repo-only ones, the managed checkout (reference §5.9)."""

from __future__ import annotations

from typing import Final, Literal

from eventsourcing.domain import event

from workspace_realizer.domain.base import CompanyScoped
from workspace_realizer.domain.documents import (
    ProjectWorkspaceFields,
    RuntimeCommand,
    RuntimeConfigDocument,
)
from workspace_realizer.domain.errors import (
    PathRequiredError,
    StateConflictError,
)
from workspace_realizer.domain.names import check_name
from workspace_realizer.domain.runtime_config import normalize_runtime_config
from workspace_realizer.domain.sources import blank_to_none, check_source

__all__ = ["REVISABLE_FIELDS", "CheckoutState", "ProjectWorkspace", "check_source"]

CheckoutState = Literal["none", "cloning", "ready", "failed"]

REVISABLE_FIELDS: Final = (
    "name",
    "cwd",
    "repo_url",
    "repo_ref",
    "is_primary",
    "setup_command",
    "cleanup_command",
)
_CAMEL: Final = {
    "name": "name",
    "cwd": "cwd",
    "repo_url": "repoUrl",
    "repo_ref": "repoRef",
    "is_primary": "isPrimary",
    "setup_command": "setupCommand",
    "cleanup_command": "cleanupCommand",
}


class ProjectWorkspace(CompanyScoped):
    """A project's codebase root: a local checkout, or a repository cloned under CLIPYARD_HOME."""

    node_id: str | None = None
    """The worker node whose host holds its checkout (None: recorded before worker nodes)."""

    @classmethod
    def create(
        cls,
        *,
        company_id: str,
        project_id: str,
        fields: ProjectWorkspaceFields,
        runtime_config: RuntimeConfigDocument | None,
        node_id: str | None = None,
    ) -> ProjectWorkspace:
        """A new project workspace; its runtime config is validated and given command ids.

        Args:
            company_id: The owning company.
            project_id: The owning project.
            fields: ``name``, ``cwd``, ``repo_url``, ``repo_ref``, ``is_primary``,
                ``setup_command``, ``cleanup_command``.
            runtime_config: The stored (camelCase) runtime config, or None.
            node_id: The worker node whose host holds its checkout (docs/scale-out.md, "Worker
                nodes"); None in records from before nodes, which belong to the only one.

        Raises:
            PathRequiredError: Neither cwd nor repoUrl.
            InvalidInputError: A relative cwd, a bad name, or a bad runtime config.
        """
        cwd, repo_url = check_source(fields.get("cwd"), fields.get("repo_url"))
        return cls(
            company_id=company_id,
            project_id=project_id,
            name=check_name(str(fields.get("name") or ""), what="project workspace"),
            cwd=cwd,
            repo_url=repo_url,
            repo_ref=blank_to_none(fields.get("repo_ref")),
            is_primary=bool(fields.get("is_primary")),
            setup_command=fields.get("setup_command"),
            cleanup_command=fields.get("cleanup_command"),
            runtime_config=runtime_config,
            commands=normalize_runtime_config(runtime_config),
            node_id=node_id,
        )

    @event("Created")
    def __init__(
        self,
        *,
        company_id: str,
        project_id: str,
        name: str,
        cwd: str | None,
        repo_url: str | None,
        repo_ref: str | None,
        is_primary: bool,
        setup_command: str | None,
        cleanup_command: str | None,
        runtime_config: RuntimeConfigDocument | None,
        commands: list[RuntimeCommand],
        node_id: str | None = None,
    ) -> None:
        self.company_id = company_id
        self.node_id = node_id
        self.project_id = project_id
        self.name = name
        self.cwd = cwd
        self.repo_url = repo_url
        self.repo_ref = repo_ref
        self.is_primary = is_primary
        self.setup_command = setup_command
        self.cleanup_command = cleanup_command
        self.runtime_config = runtime_config
        self.commands = commands
        self.checkout_state: CheckoutState = "none"
        self.checkout_path: str | None = None
        self.checkout_error: str | None = None
        self.checkout_operation_id: str | None = None
        self.deleted = False

    @property
    def repo_only(self) -> bool:
        """True when there is no local checkout: the realizer keeps a managed clone."""
        return self.cwd is None

    @property
    def needs_clone(self) -> bool:
        """True when the realizer should clone it now: repo-only, with no managed checkout yet
        (just created, or its source changed)."""
        return self.repo_only and self.checkout_state == "none"

    @property
    def checkout(self) -> str | None:
        """The directory worktrees branch from: ``cwd``, else the managed checkout when ready."""
        if self.cwd is not None:
            return self.cwd
        return self.checkout_path if self.checkout_state == "ready" else None

    def record(self) -> ProjectWorkspaceFields:
        """The revisable fields as they are now."""
        return {
            "name": self.name,
            "cwd": self.cwd,
            "repo_url": self.repo_url,
            "repo_ref": self.repo_ref,
            "is_primary": self.is_primary,
            "setup_command": self.setup_command,
            "cleanup_command": self.cleanup_command,
        }

    def revise(self, changes: ProjectWorkspaceFields) -> list[str]:
        """Apply ``changes`` (a subset of :data:`REVISABLE_FIELDS`); return the changed fields
        (camelCase). One event carries the whole record after the change; none if nothing moved.

        Raises:
            PathRequiredError: The change itself clears both cwd and repoUrl.
            StateConflictError: It clears one, and the workspace has not the other.
            InvalidInputError: A relative cwd or a bad name.
        """
        after: ProjectWorkspaceFields = {**self.record(), **changes}
        try:
            cwd, repo_url = check_source(after.get("cwd"), after.get("repo_url"))
        except PathRequiredError:
            if {"cwd", "repo_url"} <= changes.keys():
                raise
            cleared = "cwd" if "cwd" in changes else "repoUrl"
            other = "repoUrl" if cleared == "cwd" else "cwd"
            raise StateConflictError(
                f"Clearing {cleared} would leave project workspace {self.id} with neither a "
                f"local checkout nor a repository: it has no {other}. Set {other} in the same "
                "request, or keep this one.",
                field=cleared,
            ) from None
        after["cwd"], after["repo_url"] = cwd, repo_url
        after["repo_ref"] = repo_ref = blank_to_none(after.get("repo_ref"))
        after["name"] = name = check_name(str(after.get("name") or ""), what="project workspace")
        after["is_primary"] = is_primary = bool(after.get("is_primary"))
        changed = [_CAMEL[f] for f in REVISABLE_FIELDS if after.get(f) != getattr(self, f)]
        if changed:
            self._revised(
                project_id=self.project_id,
                name=name,
                cwd=cwd,
                repo_url=repo_url,
                repo_ref=repo_ref,
                is_primary=is_primary,
                setup_command=after.get("setup_command"),
                cleanup_command=after.get("cleanup_command"),
                changed_fields=changed,
            )
        return changed

    @event("Revised")
    def _revised(
        self,
        project_id: str,
        name: str,
        cwd: str | None,
        repo_url: str | None,
        repo_ref: str | None,
        is_primary: bool,
        setup_command: str | None,
        cleanup_command: str | None,
        changed_fields: list[str],
    ) -> None:
        source_moved = (cwd, repo_url) != (self.cwd, self.repo_url)
        self.name, self.cwd, self.repo_url, self.repo_ref = name, cwd, repo_url, repo_ref
        self.is_primary = is_primary
        self.setup_command, self.cleanup_command = setup_command, cleanup_command
        if source_moved:
            self.checkout_state, self.checkout_path, self.checkout_error = "none", None, None

    def change_runtime_config(self, runtime_config: RuntimeConfigDocument | None) -> None:
        """Replace the runtime config (validated; published so the supervisor keeps a copy).

        Raises:
            InvalidInputError: The message names the offending field.
        """
        commands = normalize_runtime_config(runtime_config)
        if runtime_config != self.runtime_config:
            self._runtime_config_changed(
                project_id=self.project_id, runtime_config=runtime_config, commands=commands
            )

    @event("RuntimeConfigChanged")
    def _runtime_config_changed(
        self,
        project_id: str,
        runtime_config: RuntimeConfigDocument | None,
        commands: list[RuntimeCommand],
    ) -> None:
        self.runtime_config, self.commands = runtime_config, commands

    def start_checkout(self, path: str, operation_id: str | None) -> None:
        """A managed clone into ``path`` begins (again, after a failure or an interrupted one; the
        orchestrator serializes clones of one workspace).

        Raises:
            StateConflictError: The workspace has a local checkout or is deleted.
        """
        if not self.repo_only or self.deleted:
            raise StateConflictError(
                "This project workspace has a local checkout (cwd) or is deleted; nothing to clone.",
                projectWorkspaceId=str(self.id),
            )
        self._checkout_started(project_id=self.project_id, path=path, operation_id=operation_id)

    @event("CheckoutStarted")
    def _checkout_started(self, project_id: str, path: str, operation_id: str | None) -> None:
        self.checkout_state, self.checkout_path, self.checkout_error = "cloning", path, None
        self.checkout_operation_id = operation_id

    def finish_checkout(self, path: str, head_sha: str, branch: str | None) -> None:
        """The managed checkout is ready at ``path``."""
        self._checkout_ready(
            project_id=self.project_id,
            path=path,
            head_sha=head_sha,
            branch=branch,
            operation_id=self.checkout_operation_id,
        )

    @event("CheckoutReady")
    def _checkout_ready(
        self,
        project_id: str,
        path: str,
        head_sha: str,
        branch: str | None,
        operation_id: str | None,
    ) -> None:
        self.checkout_state, self.checkout_path, self.checkout_error = "ready", path, None

    def fail_checkout(self, error: str) -> None:
        """The managed clone failed; nothing was left behind."""
        self._checkout_failed(
            project_id=self.project_id, error=error, operation_id=self.checkout_operation_id
        )

    @event("CheckoutFailed")
    def _checkout_failed(self, project_id: str, error: str, operation_id: str | None) -> None:
        self.checkout_state, self.checkout_error = "failed", error

    def move(self, to_node: str) -> None:
        """A drain moves it to ``to_node`` (docs/scale-out.md, "Draining a node"): the managed
        checkout is cloned there anew.

        Raises:
            StateConflictError: It has a local checkout (a path on its own host) or is deleted.
        """
        if not self.repo_only or self.deleted:
            raise StateConflictError(
                "Only a repo-only project workspace can move to another node.",
                projectWorkspaceId=str(self.id),
            )
        self._moved(project_id=self.project_id, from_node=self.node_id, to_node=to_node)

    @event("Moved")
    def _moved(self, project_id: str, from_node: str | None, to_node: str) -> None:
        self.node_id = to_node
        self.checkout_state, self.checkout_path, self.checkout_error = "none", None, None

    def delete(self) -> None:
        """Delete the record (never the directory)."""
        if not self.deleted:
            self._deleted(project_id=self.project_id)

    @event("Deleted")
    def _deleted(self, project_id: str) -> None:
        self.deleted = True
