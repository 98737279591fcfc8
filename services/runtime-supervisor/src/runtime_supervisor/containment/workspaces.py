"""A workspace's contained launches (docs/design/isolation.md): the glue between a runtime
target and the node's launcher, for services, jobs and the runtime provision command.

A launch binds the target's folder read-write (its worktree, its managed checkout or the
project's own folder), a worktree's ``.git`` pointer read-only (the server's git follows it), and
starts in the command's ``cwd`` inside it. A folder Clipyard made
(an execution workspace's worktree, anything under ``$CLIPYARD_HOME``) is handed to the
company's identity; a folder of the user's (a shared workspace on the project's own checkout) keeps
its owner, and the identity writes there only what its permissions allow.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from runtime_supervisor.containment.cgroups import CgroupError, Limits, Unit
from runtime_supervisor.containment.identities import IdentityError
from runtime_supervisor.containment.launcher import ContainmentUnavailableError, joiner
from runtime_supervisor.containment.sandbox import contained_env
from runtime_supervisor.domain import ContainmentError
from runtime_supervisor.identity import require_cwd
from runtime_supervisor.process import JOB_OUTPUT_CAP, JobResult, run_job

if TYPE_CHECKING:
    from contracts.workspace_config import ResourceLimits
    from runtime_supervisor.containment.identities import Identity
    from runtime_supervisor.context import Supervisor
    from runtime_supervisor.domain import RuntimeTarget

__all__ = ["ContainedLaunch", "end_unit", "job_unit", "limits_of", "prepare_launch",
           "run_contained_job", "service_unit"]  # fmt: skip

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class ContainedLaunch:
    """What a contained start needs: the sandbox's argv prefix, what the child runs before
    exec, the identity and the unit."""

    prefix: list[str]
    preexec: Callable[[], None] | None
    identity: Identity
    unit: Unit

    def env(self, env: dict[str, str]) -> dict[str, str]:
        """The contained command's environment."""
        return contained_env(env, self.identity)


def service_unit(service_id: str) -> str:
    """The unit of a service instance (found again by its id after a restart)."""
    return f"svc-{service_id}"


def job_unit(operation_id: str) -> str:
    """The unit of a job or provision command (its operation's id)."""
    return f"job-{operation_id}"


def limits_of(limits: ResourceLimits | None) -> Limits:
    """A command's configured limits as a unit's."""
    if limits is None:
        return Limits()
    return Limits(memory_mb=limits.memory_mb, pids=limits.processes, cpus=limits.cpus)


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _clipyard_made(target: RuntimeTarget, root: Path, home: Path) -> bool:
    if _within(root.resolve(), home.resolve()):
        return True
    return target.kind == "execution_workspace" and target.mode not in (None, "shared_workspace")


async def prepare_launch(
    sup: Supervisor, target: RuntimeTarget, unit: str, limits: Limits, cwd: Path
) -> ContainedLaunch:
    """Prepare the contained launch ``unit`` of a command of ``target`` starting in ``cwd``.

    Raises:
        ContainmentError: The node cannot contain it (it then does not run).
        InvalidInputError: The target has no folder.
    """
    root = Path(require_cwd(target))
    launcher = sup.launcher
    if launcher is None:
        raise ContainmentError("This node cannot contain a company's work: it has no launcher.")
    own = [root] if _clipyard_made(target, root, sup.settings.home) else []
    try:
        contained = await asyncio.to_thread(launcher.prepare, target.company_id, unit, limits,
                                            own=own)  # fmt: skip
    except (ContainmentUnavailableError, IdentityError, CgroupError, OSError) as exc:
        raise ContainmentError(str(exc), workspaceId=target.id) from None
    pointer = root / ".git"
    binds = ["--ro-bind", str(pointer), str(pointer)] if pointer.is_file() else []
    prefix = launcher.command([], contained, cwd=cwd, writable=[root], binds=binds)
    return ContainedLaunch(prefix=prefix, preexec=joiner(contained.unit),
                           identity=contained.identity, unit=contained.unit)  # fmt: skip


async def end_unit(sup: Supervisor, name: str) -> list[int]:
    """Kill what is left in the unit ``name`` and remove it; returns the pids that survived."""
    launcher = sup.launcher
    unit = launcher.unit(name) if launcher is not None else None
    if unit is None:
        return []

    def end() -> list[int]:
        left = unit.kill()
        if not left:
            unit.remove()
        return left

    left = await asyncio.to_thread(end)
    if left:
        log.error("processes of resource unit %s survived SIGKILL: %s", name, left)
    return left


async def run_contained_job(
    sup: Supervisor,
    target: RuntimeTarget,
    unit: str,
    limits: Limits,
    *,
    command: str,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    cap: int = JOB_OUTPUT_CAP,
) -> JobResult:
    """Run a one-shot command of ``target`` contained in the unit ``unit``; whatever it left
    running dies with the unit, and a hit limit is named in the result."""
    try:
        launch = await prepare_launch(sup, target, unit, limits, cwd)
    except ContainmentError as exc:
        now = datetime.now(UTC)
        return JobResult(exit_code=None, signal=None, stdout="", stderr=f"{exc}\n",
                         stdout_bytes=0, stderr_bytes=0, truncated=False, timed_out=False,
                         started_at=now, finished_at=now, error=str(exc))  # fmt: skip
    try:
        result = await run_job(command=command, cwd=cwd, env=launch.env(env), timeout=timeout,
                               cap=cap, prefix=launch.prefix, preexec=launch.preexec)  # fmt: skip
        hit = await asyncio.to_thread(launch.unit.usage)
    finally:
        await end_unit(sup, unit)
    if result.exit_code != 0 and hit.reason():
        return dataclasses.replace(result, limit=hit.reason())
    return result
