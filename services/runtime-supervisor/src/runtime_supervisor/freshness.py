"""Read-your-writes across services: act on a workspace only once this service's copies have had
what the caller has just read from the workspace-realizer (now, or before they moved on past it).

The copies follow the realizer's events through JetStream, while a caller (the gateway, the
heartbeat-controller) asks the realizer and then this service straight away: the realizer's answer
can overtake its own events. So a request that carries :class:`RealizerFacts` (or names a
workspace the realizer has just realized) waits, up to :data:`COPY_WAIT` seconds and within the
request's deadline, for the copies to catch up: a workspace realized a moment ago is found, and a
configuration saved a moment ago is the one used. Still behind after that: ``service_unavailable``
(503, retry); still unknown: ``not_found``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import msgspec

from contracts.workspace_config import ExecutionWorkspaceConfig, RuntimeConfig
from runtime_supervisor.domain import CopiesBehindError, NotFoundError
from runtime_supervisor.domain.configs_seen import config_fingerprint

if TYPE_CHECKING:
    from collections.abc import Callable

    from contracts.runtime_commands import RealizerFacts
    from natsbus import RequestContext
    from runtime_supervisor.application import RuntimeSupervisorApplication
    from runtime_supervisor.context import Supervisor
    from runtime_supervisor.domain import CopyKind, RuntimeTarget

    Seen = Callable[[CopyKind, str], set[bytes]]

__all__ = ["COPY_WAIT", "behind", "fresh_target", "wait_for"]

COPY_WAIT = 10.0
"""Seconds a request waits at most for the copies to catch up with the realizer."""
_POLL = 0.1
_ANSWER_MARGIN = 1.0
"""Seconds kept before the request's deadline, so that the refusal still reaches the caller."""


def wait_for(ctx: RequestContext) -> float:
    """How long a request may wait for the copies: :data:`COPY_WAIT`, less near its deadline."""
    return max(0.0, min(COPY_WAIT, ctx.remaining() - _ANSWER_MARGIN))


def behind(target: RuntimeTarget, facts: RealizerFacts | None, seen: Seen) -> list[str]:
    """What the copies (``target``) have not yet had of ``facts``; empty when they have.

    A configuration counts once the copy has had it, now or before (a copy that moved on past
    what the caller read is not behind); the generation once the copy's is at least the caller's.

    Args:
        target: The workspace as the copies say now.
        facts: What the caller read from the realizer (None: nothing to compare).
        seen: ``seen(kind, id)``: the fingerprints of the configurations a copy has had.

    Returns:
        The names of the facts not had yet (``workspaceConfig``, ``projectRuntimeConfig``,
        ``lifecycleGeneration``).
    """
    if facts is None:
        return []
    differ: list[str] = []
    execution = target.kind == "execution_workspace"
    config = facts.workspace_config
    if execution and not isinstance(config, msgspec.UnsetType):
        fingerprint = config_fingerprint(config, ExecutionWorkspaceConfig)
        if fingerprint not in seen("workspace", target.id):
            differ.append("workspaceConfig")
    runtime = facts.project_runtime_config
    if not isinstance(runtime, msgspec.UnsetType) and target.project_workspace_id is not None:
        fingerprint = config_fingerprint(runtime, RuntimeConfig)
        if fingerprint not in seen("project_workspace", target.project_workspace_id):
            differ.append("projectRuntimeConfig")
    generation = facts.lifecycle_generation
    # Copies only move forward: a newer generation here is newer than what the caller read.
    if (
        execution
        and not isinstance(generation, msgspec.UnsetType)
        and target.lifecycle_generation < generation
    ):
        differ.append("lifecycleGeneration")
    return differ


def _look(
    app: RuntimeSupervisorApplication,
    scope: str | None,
    workspace_id: str | None,
    project_workspace_id: str | None,
    facts: RealizerFacts | None,
) -> tuple[RuntimeTarget, list[str]]:
    """On the store's thread: the target and what its copies have not had of ``facts``."""
    target = app.target(scope, workspace_id, project_workspace_id)

    def seen(kind: CopyKind, key: str) -> set[bytes]:
        return app.configs_seen.get((kind, key), set())

    return target, behind(target, facts, seen)


async def fresh_target(
    sup: Supervisor,
    scope: str | None,
    *,
    workspace_id: str | None = None,
    project_workspace_id: str | None = None,
    facts: RealizerFacts | None = None,
    wait: float = COPY_WAIT,
) -> RuntimeTarget:
    """The target as the copies say it, once they know it and agree with ``facts``.

    Args:
        sup: The supervisor.
        scope: The principal's company (None: an operator's, every company).
        workspace_id: An execution workspace, or
        project_workspace_id: a project workspace.
        facts: What the caller read from the realizer.
        wait: Seconds to wait at most (see :func:`wait_for`).

    Raises:
        NotFoundError: Still unknown (or another company's) after ``wait``.
        CopiesBehindError: Known, but still behind ``facts`` after ``wait``.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(wait, 0.0)
    while True:
        try:
            looked: tuple[RuntimeTarget, list[str]] = await sup.store(
                _look, sup.app, scope, workspace_id, project_workspace_id, facts
            )
            target, differ = looked
        except NotFoundError:
            if loop.time() >= deadline:
                raise
        else:
            if not differ:
                return target
            if loop.time() >= deadline:
                raise CopiesBehindError(
                    f"The runtime-supervisor has not yet heard the workspace-realizer's latest "
                    f"change to {target.kind.replace('_', ' ')} {target.id} "
                    f"({', '.join(differ)}); retry in a moment.",
                    workspaceId=target.id,
                    behind=differ,
                )
        await asyncio.sleep(_POLL)
