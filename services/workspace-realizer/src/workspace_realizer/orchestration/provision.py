"""The provision command (reference §5.5, DECISIONS 1): it runs when a worktree was created (or
rebuilt after it went missing), never on plain reuse, with the ``CLIPYARD_WORKSPACE_*``
environment describing the workspace."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from workspace_realizer.domain.errors import HostStepError

if TYPE_CHECKING:
    from workspace_realizer.adapters.ports import BaseRef, StepSink
    from workspace_realizer.orchestration.context import Realizer
    from workspace_realizer.usecases.host.planning import BaseCheckout, RealizePlan

__all__ = ["WorkspaceEnv", "provision_if", "run_provision", "workspace_env"]


@dataclass(frozen=True)
class WorkspaceEnv:
    """The facts a workspace command is told about (as ``CLIPYARD_*`` variables)."""

    company_id: str
    project_id: str
    issue_id: str
    issue_identifier: str
    cwd: str
    branch: str | None
    base_cwd: str
    repo_root: str
    repo_ref: str | None
    repo_url: str | None
    created: bool

    def variables(self) -> dict[str, str]:
        """The environment variables added to the command's sanitized environment."""
        return {
            "CLIPYARD_WORKSPACE_CWD": self.cwd,
            "CLIPYARD_WORKSPACE_PATH": self.cwd,
            "CLIPYARD_WORKSPACE_BRANCH": self.branch or "",
            "CLIPYARD_WORKSPACE_BASE_CWD": self.base_cwd,
            "CLIPYARD_WORKSPACE_REPO_ROOT": self.repo_root,
            "CLIPYARD_WORKSPACE_REPO_REF": self.repo_ref or "",
            "CLIPYARD_WORKSPACE_REPO_URL": self.repo_url or "",
            "CLIPYARD_WORKSPACE_CREATED": "true" if self.created else "false",
            "CLIPYARD_PROJECT_ID": self.project_id,
            "CLIPYARD_ISSUE_ID": self.issue_id,
            "CLIPYARD_ISSUE_IDENTIFIER": self.issue_identifier,
            "CLIPYARD_COMPANY_ID": self.company_id,
        }


async def run_provision(
    ctx: Realizer,
    *,
    workspace_id: str,
    command: str | None,
    env: WorkspaceEnv,
    sink: StepSink,
    operation_id: str | None,
) -> None:
    """Run the provision command (if any) and record its outcome on the workspace.

    Raises:
        HostStepError: The command failed (the workspace stays, and the next realization runs
            the command again).
    """
    if not command:
        await ctx.store(ctx.app.record_provision, workspace_id, None, None)
        return
    result = await ctx.ports.commands.run(
        phase="workspace_provision",
        command=command,
        cwd=Path(env.cwd),
        env=env.variables(),
        timeout=ctx.command_timeout,
        sink=sink,
        company_id=env.company_id,
        project_id=env.project_id,
        workspace_id=workspace_id,
    )
    if result.exit_code == 0:
        await ctx.store(ctx.app.record_provision, workspace_id, operation_id, None)
        return
    output = (result.step.stderr or result.step.stdout)[-2000:].decode("utf-8", "replace").strip()
    error = f"Provision command failed with exit code {result.exit_code}" + (
        f": {output}" if output else ""
    )
    await ctx.store(ctx.app.record_provision, workspace_id, operation_id, error)
    raise HostStepError(error, workspaceId=workspace_id, exitCode=result.exit_code)


async def provision_if(
    ctx: Realizer,
    workspace_id: str,
    created: bool,
    command: str | None,
    env: WorkspaceEnv,
    sink: StepSink,
    operation_id: str | None,
) -> None:
    """:func:`run_provision` when ``created`` (the worktree was made or rebuilt)."""
    if created:
        await run_provision(
            ctx,
            workspace_id=workspace_id,
            command=command,
            env=env,
            sink=sink,
            operation_id=operation_id,
        )


def workspace_env(
    plan: RealizePlan,
    base: BaseCheckout,
    root: Path,
    path: Path,
    branch: str,
    base_ref: BaseRef,
    *,
    created: bool,
) -> WorkspaceEnv:
    """The ``CLIPYARD_WORKSPACE_*`` environment of a worktree at ``path`` on ``branch``."""
    return WorkspaceEnv(
        company_id=plan.company_id,
        project_id=plan.project_id,
        issue_id=plan.issue_id,
        issue_identifier=plan.identifier,
        cwd=str(path),
        branch=branch,
        base_cwd=str(root),
        repo_root=str(root),
        repo_ref=base_ref.ref,
        repo_url=base.repo_url,
        created=created,
    )
