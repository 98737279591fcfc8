"""The cleanup and teardown commands of a manual archive (reference §5.7), run only inside the
workspace's own worktree.

They never run anywhere else (DECISIONS 3): not in the project checkout when the worktree is gone
(a teardown ``rm -rf "$CLIPYARD_WORKSPACE_CWD"`` would delete it), not for a shared workspace (its
archive removes only the record) and not in a directory cleanup would refuse to delete.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace_realizer.adapters.safety import removal_refusal
from workspace_realizer.orchestration.facts import close_commands
from workspace_realizer.orchestration.provision import WorkspaceEnv

if TYPE_CHECKING:
    from workspace_realizer.orchestration.context import Realizer
    from workspace_realizer.orchestration.facts import CloseFacts

__all__ = ["command_cwd", "run_close_commands"]


def command_cwd(facts: CloseFacts) -> tuple[Path | None, str | None]:
    """Where the close commands may run: ``(cwd, None)``, or ``(None, why they are skipped)``.

    Args:
        facts: The stored facts of the workspace being archived.

    Returns:
        The worktree to run in, or the reason nothing runs (None when there is nothing to run).
    """
    ws = facts.workspace
    if not close_commands(facts):
        return None, None
    if ws.mode == "shared_workspace" or not ws.is_worktree:
        return None, (
            "Skipped the cleanup and teardown commands: this workspace shares the project "
            "checkout, and its archive removes only the record."
        )
    if not ws.path or not os.path.isdir(ws.path):
        return None, (
            f"Skipped the cleanup and teardown commands: the worktree {ws.path} no longer exists."
        )
    base = [p for p in (facts.base.cwd, facts.base.checkout_path) if p] if facts.base else []
    refusal = removal_refusal(ws.path, [*facts.protected, *base])
    if refusal is not None:
        return None, f"Skipped the cleanup and teardown commands: {refusal}"
    return Path(ws.path), None


async def run_close_commands(ctx: Realizer, facts: CloseFacts, sink: Any) -> list[str]:
    """Run the cleanup and teardown commands in the workspace's own worktree.

    Args:
        ctx: The realizer.
        facts: The stored facts of the workspace being archived.
        sink: The step sink of the archive operation.

    Returns:
        Warnings: a skip (and why), or each command that failed.
    """
    cwd, skipped = await asyncio.to_thread(command_cwd, facts)
    if cwd is None:
        return [skipped] if skipped else []
    ws = facts.workspace
    env = WorkspaceEnv(
        company_id=ws.company_id,
        project_id=ws.project_id,
        issue_id=ws.source_issue_id,
        issue_identifier=next(
            (i.identifier for i in facts.linked if i.id == ws.source_issue_id), ""
        ),
        cwd=str(cwd),
        branch=ws.branch_name,
        base_cwd=str(facts.repo_root or cwd),
        repo_root=str(facts.repo_root or cwd),
        repo_ref=ws.base_ref,
        repo_url=ws.repo_url,
        created=False,
    )
    warnings = []
    for _kind, label, command in close_commands(facts):
        result = await ctx.ports.commands.run(
            phase="workspace_teardown",
            command=command,
            cwd=cwd,
            env=env.variables(),
            timeout=ctx.command_timeout,
            sink=sink,
            company_id=ws.company_id,
            project_id=ws.project_id,
            workspace_id=ws.id,
        )
        if result.exit_code != 0:
            warnings.append(f"{label} failed with exit code {result.exit_code}.")
    return warnings
