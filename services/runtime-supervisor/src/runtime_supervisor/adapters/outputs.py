"""Output files of the supervisor's workspace operations (as the realizer's ``steps.py``): the
full (capped) stdout and stderr of a step under ``$CLIPYARD_HOME/operations/<id>/``, read back by
byte range; the stored operation keeps the last 64 KiB of each. URL credentials and query strings
are hidden before anything is stored (as the realizer does for its steps)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from telemetry import scrub_url_secrets

if TYPE_CHECKING:
    from contracts.execution_views import WorkspaceOperationDetail
    from runtime_supervisor.application import RuntimeSupervisorApplication
    from runtime_supervisor.domain.operations import OperationMetadata

__all__ = [
    "MAX_OUTPUT_RANGE",
    "finish_with_output",
    "output_path",
    "read_output",
    "scrub_output",
    "write_output",
]

MAX_OUTPUT_RANGE: Final = 256 * 1024
"""The largest byte range one output query returns."""

Store = Callable[..., Awaitable[Any]]


def output_path(home: Path, operation_id: str, stream: str) -> Path:
    """Where one stream of a workspace operation's output is kept."""
    return home / "operations" / operation_id / stream


def scrub_output(data: bytes) -> bytes:
    """``data`` with URL credentials and query strings hidden (bytes that are not UTF-8 kept)."""
    text = data.decode("utf-8", errors="surrogateescape")
    return scrub_url_secrets(text).encode("utf-8", errors="surrogateescape")


def write_output(home: Path, operation_id: str, stdout: bytes, stderr: bytes) -> Path:
    """Write both streams (blocking: call it in a thread); return their directory."""
    directory = home / "operations" / operation_id
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "stdout").write_bytes(stdout)
    (directory / "stderr").write_bytes(stderr)
    return directory


def read_output(
    home: Path, operation_id: str, stream: str, offset: int, length: int
) -> tuple[bytes, int]:
    """``(bytes, total size)`` of a stream's range (blocking); empty when the file is gone."""
    if stream not in ("stdout", "stderr"):
        raise ValueError("stream is stdout or stderr")
    path = output_path(home, operation_id, stream)
    try:
        with path.open("rb") as handle:
            total = path.stat().st_size
            handle.seek(offset)
            return handle.read(min(length, MAX_OUTPUT_RANGE)), total
    except FileNotFoundError:
        return b"", 0


async def finish_with_output(
    app: RuntimeSupervisorApplication,
    store: Store,
    home: Path,
    operation_id: str,
    *,
    status: str,
    exit_code: int | None,
    stdout: bytes,
    stderr: bytes,
    truncated: bool = False,
    metadata: OperationMetadata | None = None,
) -> WorkspaceOperationDetail:
    """Write the step's output files (in a thread), then record its end on the store's thread.

    Args:
        app: The application.
        store: Runs a call on the store's thread (``runtime.store``).
        home: ``$CLIPYARD_HOME``.
        operation_id: The operation ``start_operation`` recorded.
        status: ``succeeded``, ``failed`` or ``skipped``.
        exit_code: The command's exit code.
        stdout: Its captured stdout (already capped by the runner).
        stderr: Its captured stderr.
        truncated: The runner cut the capture.
        metadata: Added to the operation's metadata.
    """
    stdout, stderr = scrub_output(stdout), scrub_output(stderr)
    directory = await asyncio.to_thread(write_output, home, operation_id, stdout, stderr)
    finished: WorkspaceOperationDetail = await store(
        app.finish_operation,
        operation_id,
        status=status,
        exit_code=exit_code,
        stdout=stdout,
        stderr=stderr,
        truncated=truncated,
        log_dir=str(directory),
        metadata=metadata,
    )
    return finished
