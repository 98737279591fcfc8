"""Provision, teardown and cleanup commands (reference §5.5; ARCHITECTURE §6).

A command runs as ``$SHELL -c <command>`` (``/bin/sh`` when ``SHELL`` is unset) in the given
directory, in its own session, with a sanitized environment plus the variables the caller passes
(``CLIPYARD_WORKSPACE_*`` and the like). On timeout its whole process group is killed. Each stream
keeps its last 256 KiB (``truncated`` says when more was written), URL secrets scrubbed.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from workspace_realizer.adapters.environment import workspace_env
from workspace_realizer.adapters.ports import CommandResult, Phase, Step, StepSink
from workspace_realizer.adapters.process import run_process, scrub_bytes

__all__ = ["TIMEOUT_EXIT_CODE", "ShellCommandRunner"]

TIMEOUT_EXIT_CODE = 124
"""The exit code reported for a command killed on timeout (as ``timeout(1)`` does)."""


class ShellCommandRunner:
    """The :class:`~workspace_realizer.adapters.ports.CommandRunner` of the host.

    Args:
        base_env: The environment commands start from, before sanitizing (default: this
            process's environment, read at each run).
        shell: The shell (default: ``$SHELL`` of the base environment, else ``/bin/sh``).
    """

    def __init__(
        self, *, base_env: Mapping[str, str] | None = None, shell: str | None = None
    ) -> None:
        self._base_env = dict(base_env) if base_env is not None else None
        self._shell = shell

    def _shell_path(self, base: Mapping[str, str]) -> str:
        shell = self._shell or base.get("SHELL") or "/bin/sh"
        if not os.path.isabs(shell):
            shell = shutil.which(shell) or "/bin/sh"
        return shell if os.access(shell, os.X_OK) else "/bin/sh"

    async def run(
        self,
        *,
        phase: Phase,
        command: str,
        cwd: Path,
        env: Mapping[str, str],
        timeout: float,
        sink: StepSink,
    ) -> CommandResult:
        """Run ``command`` and report it as one step.

        Args:
            phase: The operation phase (``workspace_provision``, ``workspace_teardown``, ...).
            command: The shell command line.
            cwd: The working directory.
            env: Variables added after sanitizing.
            timeout: Seconds until the process group is killed.
            sink: Receives the step.

        Returns:
            The exit code (``124`` on timeout, ``127`` when the shell could not start) and the step.
        """
        base = dict(os.environ) if self._base_env is None else self._base_env
        shell = self._shell_path(base)
        outcome = await run_process(
            [shell, "-c", command], cwd=cwd, env=workspace_env(env, base=base), timeout=timeout
        )
        if outcome.timed_out:
            exit_code = TIMEOUT_EXIT_CODE
        elif outcome.returncode is None:
            exit_code = 127
        elif outcome.returncode < 0:
            exit_code = 128 - outcome.returncode
        else:
            exit_code = outcome.returncode
        stderr = scrub_bytes(outcome.stderr)
        if outcome.timed_out:
            stderr = scrub_bytes(
                stderr
                + f"\n[clipyard] timed out after {timeout:g}s; process group killed\n".encode()
            )
        metadata: dict[str, object] = {"shell": shell, "timeoutSec": timeout}
        if outcome.timed_out:
            metadata["timedOut"] = True
        if outcome.returncode is not None and outcome.returncode < 0:
            metadata["signal"] = -outcome.returncode
        step = Step(
            phase=phase,
            command=scrub_bytes(command.encode(), cap=None).decode("utf-8", "replace"),
            cwd=str(cwd),
            status="succeeded" if exit_code == 0 else "failed",
            exit_code=exit_code,
            stdout=scrub_bytes(outcome.stdout),
            stderr=stderr,
            truncated=outcome.truncated,
            started_at=outcome.started_at,
            finished_at=outcome.finished_at,
            metadata=metadata,
        )
        await sink(step)
        return CommandResult(exit_code=exit_code, step=step)
