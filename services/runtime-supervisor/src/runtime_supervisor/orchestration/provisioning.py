"""Lazy runtime provisioning (DECISIONS 1): the workspace's runtime provision command runs once,
before the first runtime service start in its current checkout, as one supervisor workspace
operation; concurrent starts wait for the one run (single flight per target). A failure fails the
start, naming the operation; the next start runs the command again.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from runtime_supervisor.adapters.containment.cgroups import Limits
from runtime_supervisor.adapters.containment.workspaces import job_unit, run_contained_job
from runtime_supervisor.adapters.outputs import finish_with_output, output_path
from runtime_supervisor.adapters.process import JobResult
from runtime_supervisor.domain import ProvisioningFailedError
from runtime_supervisor.domain.environment import sanitized_env
from runtime_supervisor.domain.identity import require_cwd
from runtime_supervisor.orchestration.progress import report_step

if TYPE_CHECKING:
    from runtime_supervisor.domain import RuntimeTarget
    from runtime_supervisor.orchestration.context import Supervisor

__all__ = ["describe_job", "ensure_provisioned"]


def describe_job(result: JobResult, timeout: float) -> str:
    """How a job ended, in a few words (``exit 2``, ``timed out after 600s``, ...)."""
    if result.error:
        return result.error
    if result.timed_out:
        return f"timed out after {timeout:g}s"
    ending = (
        f"killed by signal {result.signal}"
        if result.signal is not None
        else f"exit {result.exit_code}"
    )
    return f"{ending}: {result.limit}" if result.limit else ending


async def ensure_provisioned(
    sup: Supervisor, target: RuntimeTarget, *, operation_id: str | None = None
) -> None:
    """Run the target's runtime provision command if it has one that has not succeeded in its
    current checkout; return at once otherwise.

    Args:
        sup: The supervisor.
        target: The workspace about to start a service.
        operation_id: The long operation the start belongs to.

    Raises:
        ProvisioningFailedError: The command failed (its operation is named).
    """
    if not target.runtime_provision_command:
        return
    app = sup.app
    async with sup.locks.hold(f"provision:{target.key}"):
        target = await sup.store(app.current, target)
        if not await sup.store(app.needs_provisioning, target):
            return
        command = target.runtime_provision_command or ""
        cwd = require_cwd(target)
        op: str = await sup.store(
            app.start_operation,
            target,
            phase="workspace_provision",
            command=command,
            cwd=cwd,
            operation_id=operation_id,
            metadata={"workspaceCommandKind": "runtime_provision"},
        )
        await sup.store(app.provisioning_started, target, operation_id=op, command=command)
        await report_step(sup, operation_id, target, op, "runtime provision command started")
        timeout = sup.settings.job_timeout
        result = await run_contained_job(
            sup,
            target,
            job_unit(op),
            Limits(),
            command=command,
            cwd=Path(cwd),
            env=sanitized_env(sup.base_env),
            timeout=timeout,
            live=output_path(sup.settings.home, op, "stdout").parent,
        )
        ok = result.exit_code == 0 and not result.timed_out and not result.limit
        await finish_with_output(
            app,
            sup.store,
            sup.settings.home,
            op,
            status="succeeded" if ok else "failed",
            exit_code=result.exit_code,
            stdout=result.stdout.encode(),
            stderr=result.stderr.encode(),
            truncated=result.truncated,
            metadata={"exitSignal": result.signal, "timedOut": result.timed_out},
        )
        await report_step(sup, operation_id, target, op, describe_job(result, timeout), percent=100)
        if ok:
            await sup.store(app.provisioning_succeeded, target, operation_id=op)
            return
        error = describe_job(result, timeout)
        await sup.store(app.provisioning_failed, target, operation_id=op, error=error)
        raise ProvisioningFailedError(
            f"The workspace's runtime provision command failed ({error}); no runtime service "
            f"was started. See workspace operation {op} for its output.",
            operationId=op,
            exitCode=result.exit_code,
        )
