"""Work cut short by a crash or a kill (ARCHITECTURE §4.4): at start, no archive task and no host
step can be running in this fresh process.
- Every workspace still ``closing`` is failed at its generation (``cleanupReason``
  "interrupted"). It is then ``cleanup_failed``: the reaper retries it, a manual archive or a
  reopen may follow.
- Every host step of this node still ``running`` (a clone, a provision command begun before the
  crash) is ended ``failed``, saying so, so no page follows it forever."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from eventstore import acting, system_cause
from workspace_realizer.domain.host.operations import EXCERPT_BYTES, excerpt
from workspace_realizer.orchestration.archive import INTERRUPTED
from workspace_realizer.orchestration.steps import output_tail

if TYPE_CHECKING:
    from workspace_realizer.application import WorkspaceRealizerApplication

__all__ = ["INTERRUPTED_STEP", "fail_interrupted_archives", "fail_interrupted_steps"]

INTERRUPTED_STEP = "[clipyard] interrupted: the workspace-realizer stopped while this step ran\n"

log = logging.getLogger(__name__)


def fail_interrupted_archives(
    app: WorkspaceRealizerApplication, service: str, node: str = "local"
) -> list[str]:
    """Record ``CleanupFailed`` for every workspace of ``node`` left closing (store thread; call
    at start only, by that node's host part: another node's archives are that node's).

    Args:
        app: The realizer's application.
        service: The acting service's name (the system actor).
        node: This host part's node id (``CLIPYARD_NODE_ID``).

    Returns:
        The ids of the workspaces failed.
    """
    closing = [
        (str(ws.id), ws.lifecycle_generation)
        for ws in app.workspaces.values()
        if ws.closing and ws.node_id == node
    ]
    failed = []
    with acting(system_cause(service, "an archive was interrupted by a restart")):
        for workspace_id, generation in closing:
            done = app.fail_cleanup(
                workspace_id, generation, error=INTERRUPTED, rescue_ref=None, operation_id=None
            )
            if done is not None:
                failed.append(workspace_id)
    if failed:
        log.warning("failed interrupted archives", extra={"workspace_ids": failed})
    return failed


def _tail(log_dir: str | None, stream: str) -> tuple[bytes, int]:
    """The last :data:`EXCERPT_BYTES` of a step's output file and its size (nothing if gone)."""
    if log_dir is None:
        return b"", 0
    return output_tail(Path(log_dir) / stream, EXCERPT_BYTES)


def fail_interrupted_steps(
    app: WorkspaceRealizerApplication, service: str, node: str = "local"
) -> list[str]:
    """End ``failed`` every host step of ``node`` left ``running`` (store thread; at start only,
    by that node's host part). Its output files keep what was written before the crash.

    Returns:
        The ids of the steps ended.
    """
    running = [
        key
        for key, step in app.operations.items()
        if step.status == "running" and getattr(step, "node_id", None) == node
    ]
    with acting(system_cause(service, "a host step was interrupted by a restart")):
        for key in running:
            step = app.operations[key]
            stdout, out_size = _tail(step.log_dir, "stdout")
            stderr, err_size = _tail(step.log_dir, "stderr")
            stdout_excerpt, cut_out = excerpt(stdout)
            stderr_excerpt, cut_err = excerpt(stderr + INTERRUPTED_STEP.encode())
            app.finish_operation(
                key,
                {
                    "status": "failed",
                    "exit_code": None,
                    "finished_at": datetime.now(UTC),
                    "stdout_excerpt": stdout_excerpt,
                    "stderr_excerpt": stderr_excerpt,
                    "truncated": cut_out or cut_err or max(out_size, err_size) > EXCERPT_BYTES,
                    "stdout_bytes": out_size,
                    "stderr_bytes": err_size,
                    "metadata": {"interrupted": True},
                },
            )
    if running:
        log.warning("failed interrupted host steps", extra={"operation_ids": running})
    return running
