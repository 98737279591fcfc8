"""The contained run of a company's one-shot command for another part of Clipyard
(``ws.cmd.contained.run.<node>``): the realizer's provision, teardown and cleanup commands run
here, through the node's one launcher (docs/design/isolation.md), never on the realizer's host
as root.

Only Clipyard itself may ask (a ``system`` principal: 403 otherwise). The folder must be
absolute, hold ``cwd`` and not show ``$CLIPYARD_HOME`` (422); a node that cannot contain the
command answers ``sandbox_unavailable`` and runs nothing.
"""

from __future__ import annotations

import asyncio
import os.path
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from contracts.contained_commands import (
    ContainedCommandResult,
    RunContainedCommand,
    contained_run,
)
from runtime_supervisor.adapters.containment.cgroups import Limits
from runtime_supervisor.adapters.containment.workspaces import prepare_in, run_prepared
from runtime_supervisor.adapters.outputs import output_path
from runtime_supervisor.domain import InvalidInputError, target_key
from runtime_supervisor.endpoints.common import SupervisorEndpoints
from runtime_supervisor.usecases.egress import EgressOwner
from servicekit.access import AccessDeniedError, ActorKind, kind_of
from servicekit.routes import Route

if TYPE_CHECKING:
    from collections.abc import Sequence

    from natsbus import RequestContext

__all__ = ["ContainedEndpoints"]


def _checked(c: RunContainedCommand) -> tuple[Path, Path]:
    if kind_of(c.principal) is not ActorKind.SYSTEM:
        raise AccessDeniedError(
            "Only Clipyard's own services may run a contained command.",
            actor=c.principal.actor.type,
        )
    root, cwd = Path(c.root), Path(c.cwd)
    if not root.is_absolute() or not cwd.is_absolute():
        raise InvalidInputError("root and cwd must be absolute paths.", field="root")
    normal_root, normal_cwd = os.path.normpath(root), os.path.normpath(cwd)
    if normal_cwd != normal_root and not normal_cwd.startswith(normal_root.rstrip("/") + "/"):
        raise InvalidInputError(f"{cwd} is not inside {root}.", field="cwd")
    if not cwd.is_dir():
        raise InvalidInputError(f"{cwd} is not a folder on this node.", field="cwd")
    return root, cwd


class ContainedEndpoints(SupervisorEndpoints):
    """The contained-run endpoint."""

    def routes(self) -> Sequence[Route]:
        return (Route("contained_run", contained_run(self.node), self.run, RunContainedCommand),)

    def _live(self, output_ref: str | None) -> Path | None:
        """Where the command's output is written as it comes: its operation's directory under
        ``$CLIPYARD_HOME/operations`` (the contract holds ``outputRef`` to a UUID), which the
        realizer made when it began the step."""
        if output_ref is None:
            return None
        directory = output_path(self.sup.settings.home, output_ref, "stdout").parent
        # The realizer made it when it began the step: one missing, or a link, is not written.
        return directory if directory.is_dir() and not directory.is_symlink() else None

    async def run(self, c: RunContainedCommand, ctx: RequestContext) -> ContainedCommandResult:
        root, cwd = _checked(c)
        unit = f"cmd-{c.label}-{uuid.uuid4()}"
        with self.acting(c.principal, f"contained {c.label} command"):
            owner = EgressOwner(
                company_id=c.company_id,
                project_id=c.project_id,
                execution_workspace_id=c.workspace_id,
                target_key=target_key("execution_workspace", c.workspace_id)
                if c.workspace_id
                else None,
            )
            launch = await prepare_in(
                self.sup,
                c.company_id,
                root,
                owned=c.owned,
                unit=unit,
                limits=Limits(),
                cwd=cwd,
                netns_key=unit,
                owner=owner,
            )
            try:
                result = await run_prepared(
                    self.sup,
                    launch,
                    command=c.command,
                    cwd=cwd,
                    env=dict(c.env),
                    timeout=c.timeout_sec,
                    live=self._live(c.output_ref),
                )
            finally:
                if self.sup.launcher is not None:
                    await asyncio.to_thread(self.sup.launcher.drop_namespace, unit)
        return ContainedCommandResult(
            exit_code=result.exit_code,
            signal=result.signal,
            stdout=result.stdout.encode(),
            stderr=result.stderr.encode(),
            truncated=result.truncated,
            timed_out=result.timed_out,
            started_at=result.started_at,
            finished_at=result.finished_at,
            limit=result.limit,
            error=result.error,
        )
