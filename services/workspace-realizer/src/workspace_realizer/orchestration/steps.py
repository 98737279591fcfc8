"""Every host step becomes a workspace operation (reference §1.11): the step's full (capped)
output is written under ``$CLIPYARD_HOME/operations/<id>/{stdout,stderr}`` for the byte-range
endpoint, then the operation is recorded with the last 64 KiB of each stream."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eventstore import current_cause
from workspace_realizer.domain.host.operations import excerpt
from workspace_realizer.domain.host.records import OperationRecord

if TYPE_CHECKING:
    from workspace_realizer.adapters.ports import Step
    from workspace_realizer.application import WorkspaceRealizerApplication

__all__ = ["StepRecorder", "output_path", "read_output"]

Store = Callable[..., Awaitable[Any]]


def output_path(home: Path, operation_id: str, stream: str) -> Path:
    """Where one stream of a workspace operation's output is kept."""
    return home / "operations" / operation_id / stream


def _write(directory: Path, stdout: bytes, stderr: bytes) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "stdout").write_bytes(stdout)
    (directory / "stderr").write_bytes(stderr)


def read_output(
    home: Path, operation_id: str, stream: str, offset: int, length: int
) -> tuple[bytes, int]:
    """``(bytes, total size)`` of a stream's range; empty when the file is gone."""
    path = output_path(home, operation_id, stream)
    try:
        with path.open("rb") as handle:
            total = path.stat().st_size
            handle.seek(offset)
            return handle.read(length), total
    except FileNotFoundError:
        return b"", 0


class StepRecorder:
    """A :class:`~workspace_realizer.adapters.ports.StepSink` recording each step it receives.

    Args:
        app: The application that records the operations.
        store: Runs a call on the store's thread.
        home: ``$CLIPYARD_HOME``.
        company_id: The company the steps are done for.
        workspace_id: The execution workspace concerned (None for a managed clone).
        project_workspace_id: The project workspace concerned.
        issue_id: The issue concerned.
        operation_id: The long operation the steps belong to.
    """

    def __init__(
        self,
        app: WorkspaceRealizerApplication,
        store: Store,
        home: Path,
        *,
        company_id: str,
        workspace_id: str | None = None,
        project_workspace_id: str | None = None,
        issue_id: str | None = None,
        operation_id: str | None = None,
    ) -> None:
        self._app, self._store, self._home = app, store, home
        self._company_id, self._workspace_id = company_id, workspace_id
        self._project_workspace_id, self._issue_id = project_workspace_id, issue_id
        self._operation_id = operation_id
        self.ids: list[str] = []
        self.steps: list[Step] = []

    async def __call__(self, step: Step) -> None:
        """Write the step's output files, then record it."""
        ref = str(uuid.uuid4())
        directory = self._home / "operations" / ref
        await asyncio.to_thread(_write, directory, step.stdout, step.stderr)
        stdout, cut_out = excerpt(step.stdout)
        stderr, cut_err = excerpt(step.stderr)
        cause = current_cause()
        fields: OperationRecord = {
            "company_id": self._company_id,
            "execution_workspace_id": self._workspace_id,
            "project_workspace_id": self._project_workspace_id,
            "issue_id": self._issue_id,
            "operation_id": self._operation_id,
            "operation_ref": ref,
            "heartbeat_run_id": cause.run_id if cause else None,
            "phase": step.phase,
            "command": step.command,
            "cwd": step.cwd,
            "status": step.status,
            "exit_code": step.exit_code,
            "started_at": step.started_at,
            "finished_at": step.finished_at,
            "stdout_excerpt": stdout,
            "stderr_excerpt": stderr,
            "truncated": step.truncated or cut_out or cut_err,
            "stdout_bytes": len(step.stdout),
            "stderr_bytes": len(step.stderr),
            "log_dir": str(directory),
            "metadata": {key: _plain(value) for key, value in step.metadata.items()},
        }
        self.ids.append(await self._store(self._app.record_operation, fields))
        self.steps.append(step)


def _plain(value: object) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return str(value)
