"""The command runner of the running realizer: provision, teardown and cleanup commands are run
by the runtime-supervisor of this node, contained as the company's identity
(``ws.cmd.contained.run.<node>``; docs/design/isolation.md), never here as root.

The command's environment is built here as for the host runner (sanitized, plus the
``CLIPYARD_WORKSPACE_*`` variables); the supervisor takes away what could reach its root
launcher. A supervisor that does not answer, or cannot contain the command, fails the step with
what it said (exit code 127): nothing falls back to running unconfined.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import msgspec

from contracts.base import Actor, ErrorReply, Ok, Principal
from contracts.contained_commands import (
    ContainedCommandResult,
    RunContainedCommand,
    contained_run,
)
from workspace_realizer.adapters.commands import command_step
from workspace_realizer.adapters.credentials_bus import RequestBus
from workspace_realizer.adapters.environment import workspace_env
from workspace_realizer.adapters.live_steps import KEPT_OUTPUT, abandon_step, begin_step
from workspace_realizer.adapters.ports import CommandResult, Phase, Step, StepSink

__all__ = ["BusCommandRunner"]

ACTOR_ID: Final = "workspace-realizer"
_MARGIN: Final = 30.0
"""Seconds the request waits beyond the command's own timeout (the kill and the answer)."""
_LABELS: Final = {"workspace_provision": "provision", "workspace_teardown": "teardown"}


class BusCommandRunner:
    """A :class:`~workspace_realizer.adapters.ports.CommandRunner` asking the supervisor.

    Args:
        bus: The service's bus client.
        node: The node whose supervisor runs the commands (this realizer's).
        base_env: The environment commands start from, before sanitizing.
    """

    def __init__(self, bus: RequestBus, node: str, base_env: Mapping[str, str]) -> None:
        self._bus = bus
        self._subject = contained_run(node)
        self._base_env = dict(base_env)

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
        """Run ``command`` contained in the worktree ``cwd`` and report it as one step (begun
        first when the sink shows steps as they run: the supervisor writes the output there)."""
        ref = await begin_step(sink, phase=phase, command=command, cwd=str(cwd))
        request = RunContainedCommand(
            principal=Principal(company_id=company_id, actor=Actor(type="system", id=ACTOR_ID)),
            company_id=company_id,
            command=command,
            cwd=str(cwd),
            root=str(cwd),
            env=workspace_env(env, base=self._base_env),
            timeout_sec=timeout,
            owned=True,
            label=_LABELS.get(phase, "command"),
            project_id=project_id or None,
            workspace_id=workspace_id or None,
            output_ref=ref,
        )
        started = datetime.now(UTC)
        try:
            reply = await self._bus.request(self._subject, request, timeout=timeout + _MARGIN)
        except BaseException as error:
            await abandon_step(
                sink, phase, f"the request to the runtime-supervisor ended: {error!r}"
            )
            raise
        meta: dict[str, object] = {"contained": True}
        if not isinstance(reply, Ok):
            step = _unanswered(phase, command, cwd, timeout, reply, started, kept=ref is not None)
        else:
            result = msgspec.convert(reply.result, ContainedCommandResult)
            note = result.error or (f"it {result.limit}" if result.limit else None)
            step = command_step(
                phase=phase,
                command=command,
                cwd=cwd,
                timeout=timeout,
                returncode=result.exit_code,
                signal=result.signal,
                started=result.error is None,
                timed_out=result.timed_out,
                stdout=result.stdout,
                stderr=result.stderr,
                truncated=result.truncated,
                started_at=result.started_at,
                finished_at=result.finished_at,
                metadata=meta,
                note=note,
            )
        await sink(step)
        exit_code = step.exit_code if step.exit_code is not None else 127
        return CommandResult(exit_code=exit_code, step=step)


def _unanswered(
    phase: Phase,
    command: str,
    cwd: Path,
    timeout: float,
    reply: object,
    started: datetime,
    *,
    kept: bool,
) -> Step:
    """The step of a command the supervisor gave no result for. ``kept``: the step began and
    the command may have run, so what it wrote meanwhile stays, with this note after it."""
    why = (
        f"the runtime-supervisor answered {reply.code}: {reply.message}"
        if isinstance(reply, ErrorReply)
        else "the runtime-supervisor did not answer with a result"
    )
    meta: dict[str, object] = {"contained": True}
    if kept:
        meta[KEPT_OUTPUT] = True
    return command_step(
        phase=phase,
        command=command,
        cwd=cwd,
        timeout=timeout,
        returncode=None,
        signal=None,
        started=False,
        timed_out=False,
        stdout=b"",
        stderr=b"",
        truncated=False,
        started_at=started,
        finished_at=datetime.now(UTC),
        metadata=meta,
        note=f"no result: {why}" if kept else f"not run: {why}",
    )
