"""Every host step becomes a workspace operation (reference §1.11): the step's full (capped)
output is written under ``$CLIPYARD_HOME/operations/<id>/{stdout,stderr}`` for the byte-range
endpoint, then the operation is recorded with the last 64 KiB of each stream.

A long step (a clone, a provision command) is recorded ``running`` when it begins: its output
files exist from then on and grow while it runs (the supervisor writes a contained command's output
there as it comes), and the long operation it belongs to reports ``operation.progressed.v1`` as
it begins, moves on and ends (docs/design/workspace-realizer.md, "Progress").
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eventstore import current_cause
from servicekit.operations import ProgressFields, report_progress
from workspace_realizer.adapters.live_steps import KEPT_OUTPUT
from workspace_realizer.adapters.ports import OUTPUT_CAP
from workspace_realizer.adapters.process import scrub_bytes
from workspace_realizer.domain.host.operations import excerpt
from workspace_realizer.domain.host.records import OperationEnding, OperationRecord, StepFacts

if TYPE_CHECKING:
    from workspace_realizer.adapters.ports import Phase, Step
    from workspace_realizer.application import WorkspaceRealizerApplication

__all__ = ["StepRecorder", "output_path", "output_tail", "read_output"]

Store = Callable[..., Awaitable[Any]]

log = logging.getLogger(__name__)


def output_path(home: Path, operation_id: str, stream: str) -> Path:
    """Where one stream of a workspace operation's output is kept."""
    return home / "operations" / operation_id / stream


def _prepare(directory: Path) -> None:
    """The output directory of a step that begins, with both streams empty."""
    directory.mkdir(parents=True, exist_ok=True)
    for stream in ("stdout", "stderr"):
        (directory / stream).touch()


def _replace(path: Path, data: bytes) -> None:
    """Write ``path`` whole, by a rename: a writer still appending to the old file (a contained
    command's live output) cannot mix into it."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    os.replace(partial, path)


def _write(directory: Path, stdout: bytes, stderr: bytes) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    _replace(directory / "stdout", stdout)
    _replace(directory / "stderr", stderr)


def output_tail(path: Path, cap: int) -> tuple[bytes, int]:
    """The last ``cap`` bytes of an output file and its whole size (nothing when it is gone)."""
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - cap))
            return handle.read(), size
    except OSError:
        return b"", 0


def _append_note(directory: Path, note: bytes) -> tuple[bytes, bytes]:
    """Add ``note`` to the stderr written so far (kept: the step's own output never came back);
    return the tails of both streams as they are then."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "stderr").open("ab") as handle:
        handle.write(note)
    stdout, _ = output_tail(directory / "stdout", OUTPUT_CAP)
    stderr, _ = output_tail(directory / "stderr", OUTPUT_CAP)
    return stdout, stderr


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
        node_id: The node whose host runs the steps (a step left ``running`` by a crash is
            ended by that node's next start).
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
        node_id: str | None = None,
    ) -> None:
        self._app, self._store, self._home = app, store, home
        self._node_id = node_id
        self._company_id, self._workspace_id = company_id, workspace_id
        self._project_workspace_id, self._issue_id = project_workspace_id, issue_id
        self._operation_id = operation_id
        self.ids: list[str] = []
        self.steps: list[Step] = []
        self._open: dict[str, str] = {}
        """Phase -> the id of the step of that phase recorded ``running``."""
        self._reported: dict[str, tuple[str, int | None]] = {}

    async def begin(self, *, phase: Phase, command: str, cwd: str) -> str:
        """Record a step that begins now, ``running``, with empty output files; return its id."""
        ref = str(uuid.uuid4())
        directory = self._home / "operations" / ref
        await asyncio.to_thread(_prepare, directory)
        fields = self._record(ref, directory, phase=phase, command=command, cwd=cwd)
        await self._store(self._app.record_operation, fields)
        self._open[phase] = ref
        await self.progress(phase, "started")
        return ref

    async def progress(self, phase: Phase, message: str, percent: int | None = None) -> None:
        """Report how far the step of ``phase`` has come on the long operation (if any): stored
        when the message changes or the percent reaches a new tenth (a clone stores a few dozen
        reports, not one a second); nothing once the step has ended."""
        step_id = self._open.get(phase)
        if step_id is not None:
            await self._report(phase, message, percent, step_id)

    async def _report(
        self, phase: str, message: str, percent: int | None, step_id: str | None
    ) -> None:
        """Best effort: a report that cannot be stored is logged, never fails the step."""
        if self._operation_id is None:
            return
        tenth = None if percent is None else percent // 10
        if self._reported.get(phase) == (message, tenth):
            return
        self._reported[phase] = (message, tenth)
        fields: ProgressFields = {
            "phase": phase,
            "message": message,
            "percent": percent,
            "workspace_operation_id": step_id,
            "execution_workspace_id": self._workspace_id,
            "project_workspace_id": self._project_workspace_id,
        }
        try:
            await self._store(report_progress, self._app, self._operation_id, fields)
        except Exception as error:
            log.warning("progress of operation %s not recorded: %s", self._operation_id, error)

    async def abandon(self, phase: Phase, why: str) -> None:
        """End the step of ``phase`` begun and not ended (its runner failed or was cancelled
        before it could report it): ``failed``, with ``why`` added to what it wrote."""
        ref = self._open.get(phase)
        if ref is None:
            return
        directory = self._home / "operations" / ref
        note = f"\n[clipyard] {why}\n".encode()
        stdout, stderr = await asyncio.to_thread(_append_note, directory, note)
        ending = _ending("failed", None, stdout, stderr, {"abandoned": True})
        await self._store(self._app.finish_operation, ref, ending)
        self._open.pop(phase, None)
        self.ids.append(ref)
        await self._report(phase, f"failed ({why})", 100, ref)

    async def __call__(self, step: Step) -> None:
        """Write the step's output files, then record it (ending it if it began ``running``)."""
        begun = self._open.get(step.phase)
        ref = begun or str(uuid.uuid4())
        directory = self._home / "operations" / ref
        facts = {key: _plain(value) for key, value in step.metadata.items()}
        if begun is not None and facts.get(KEPT_OUTPUT):
            stdout, stderr = await asyncio.to_thread(_append_note, directory, step.stderr)
        else:
            stdout, stderr = step.stdout, step.stderr
            await asyncio.to_thread(_write, directory, stdout, stderr)
        ending = _ending(step.status, step.exit_code, stdout, stderr, facts, step)
        if begun is None:
            fields = self._record(
                ref, directory, phase=step.phase, command=step.command, cwd=step.cwd
            )
            fields["started_at"] = step.started_at
            self.ids.append(await self._store(self._app.record_operation, {**fields, **ending}))
        else:
            await self._store(self._app.finish_operation, begun, ending)
            self._open.pop(step.phase, None)
            self.ids.append(begun)
            code = "" if step.exit_code is None else f" (exit code {step.exit_code})"
            await self._report(step.phase, f"{step.status}{code}", 100, begun)
        self.steps.append(step)

    def _record(
        self, ref: str, directory: Path, *, phase: str, command: str, cwd: str
    ) -> OperationRecord:
        """The record of a step that begins now (the caller fills in an ended one's outcome)."""
        cause = current_cause()
        record: OperationRecord = {
            "company_id": self._company_id,
            "execution_workspace_id": self._workspace_id,
            "project_workspace_id": self._project_workspace_id,
            "issue_id": self._issue_id,
            "operation_id": self._operation_id,
            "operation_ref": ref,
            "heartbeat_run_id": cause.run_id if cause else None,
            "phase": phase,
            "command": scrub_bytes(command.encode(), cap=None).decode("utf-8", "replace"),
            "cwd": cwd,
            "status": "running",
            "exit_code": None,
            "started_at": datetime.now(UTC),
            "finished_at": None,
            "stdout_excerpt": "",
            "stderr_excerpt": "",
            "truncated": False,
            "stdout_bytes": 0,
            "stderr_bytes": 0,
            "log_dir": str(directory),
            "metadata": {},
        }
        if self._node_id is not None:
            record["node_id"] = self._node_id
        return record


def _ending(
    status: str,
    exit_code: int | None,
    stdout: bytes,
    stderr: bytes,
    facts: StepFacts,
    step: Step | None = None,
) -> OperationEnding:
    """How a step ended, with the last 64 KiB of each stream."""
    out, cut_out = excerpt(stdout)
    err, cut_err = excerpt(stderr)
    return {
        "status": status,
        "exit_code": exit_code,
        "finished_at": step.finished_at if step is not None else datetime.now(UTC),
        "stdout_excerpt": out,
        "stderr_excerpt": err,
        "truncated": (step.truncated if step is not None else False) or cut_out or cut_err,
        "stdout_bytes": len(stdout),
        "stderr_bytes": len(stderr),
        "metadata": facts,
    }


def _plain(value: object) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return str(value)
