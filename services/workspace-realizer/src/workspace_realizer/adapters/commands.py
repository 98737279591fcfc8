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
from datetime import datetime
from pathlib import Path

from workspace_realizer.adapters.environment import workspace_env
from workspace_realizer.adapters.live_steps import begin_step
from workspace_realizer.adapters.ports import CommandResult, Phase, Step, StepSink
from workspace_realizer.adapters.process import run_process, scrub_bytes

__all__ = ["TIMEOUT_EXIT_CODE", "ShellCommandRunner", "command_step"]

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
        company_id: str = "",
        project_id: str = "",
        workspace_id: str = "",
    ) -> CommandResult:
        """Run ``command`` and report it as one step (on this host, unconfined: only tests and
        tools use this runner; the running realizer asks the supervisor, see
        :mod:`~workspace_realizer.adapters.contained_bus`).

        Args:
            phase: The operation phase (``workspace_provision``, ``workspace_teardown``, ...).
            command: The shell command line.
            cwd: The working directory.
            env: Variables added after sanitizing.
            timeout: Seconds until the process group is killed.
            sink: Receives the step.
            company_id: The company the command is of (unused here).
            project_id: Its project (unused here: no egress rules apply on the host).
            workspace_id: Its workspace (unused here).

        Returns:
            The exit code (``124`` on timeout, ``127`` when the shell could not start) and the step.
        """
        base = dict(os.environ) if self._base_env is None else self._base_env
        shell = self._shell_path(base)
        await begin_step(sink, phase=phase, command=command, cwd=str(cwd))
        outcome = await run_process(
            [shell, "-c", command], cwd=cwd, env=workspace_env(env, base=base), timeout=timeout
        )
        signal = (
            -outcome.returncode
            if outcome.returncode is not None and outcome.returncode < 0
            else None
        )
        code = outcome.returncode if signal is None else None
        step = command_step(
            phase=phase,
            command=command,
            cwd=cwd,
            timeout=timeout,
            returncode=code,
            signal=signal,
            started=outcome.returncode is not None or outcome.timed_out,
            timed_out=outcome.timed_out,
            stdout=outcome.stdout,
            stderr=outcome.stderr,
            truncated=outcome.truncated,
            started_at=outcome.started_at,
            finished_at=outcome.finished_at,
            metadata={"shell": shell},
        )
        await sink(step)
        return CommandResult(
            exit_code=step.exit_code if step.exit_code is not None else 127, step=step
        )


def command_step(
    *,
    phase: Phase,
    command: str,
    cwd: Path,
    timeout: float,
    returncode: int | None,
    signal: int | None,
    started: bool,
    timed_out: bool,
    stdout: bytes,
    stderr: bytes,
    truncated: bool,
    started_at: datetime,
    finished_at: datetime,
    metadata: dict[str, object],
    note: str | None = None,
) -> Step:
    """The step of a finished command: its exit code (``124`` on timeout, ``127`` when it never
    started, ``128 + n`` when signal ``n`` ended it), its scrubbed output and what is known."""
    if timed_out:
        exit_code = TIMEOUT_EXIT_CODE
    elif signal is not None:
        exit_code = 128 + signal
    elif returncode is None or not started:
        exit_code = 127
    else:
        exit_code = returncode
    err = scrub_bytes(stderr)
    if timed_out:
        err = scrub_bytes(
            err + f"\n[clipyard] timed out after {timeout:g}s; process group killed\n".encode()
        )
    if note:
        err = scrub_bytes(err + f"\n[clipyard] {note}\n".encode())
    meta: dict[str, object] = {**metadata, "timeoutSec": timeout}
    if timed_out:
        meta["timedOut"] = True
    if signal is not None:
        meta["signal"] = signal
    return Step(
        phase=phase,
        command=scrub_bytes(command.encode(), cap=None).decode("utf-8", "replace"),
        cwd=str(cwd),
        status="succeeded" if exit_code == 0 else "failed",
        exit_code=exit_code,
        stdout=scrub_bytes(stdout),
        stderr=err,
        truncated=truncated,
        started_at=started_at,
        finished_at=finished_at,
        metadata=meta,
    )
