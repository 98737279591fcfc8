"""Read-your-writes across services: act on a workspace only once this service's copies have had
what the caller has just read from the workspace-realizer (now, or before they moved on past it).

The copies follow the realizer's events through JetStream, while a caller (the gateway, the
heartbeat-controller) asks the realizer and then this service straight away: the realizer's answer
can overtake its own events. So a request that carries :class:`RealizerFacts` (or names a
workspace the realizer has just realized) waits, up to :data:`COPY_WAIT` seconds and within the
request's deadline, for the copies to catch up: a workspace realized a moment ago is found, and a
configuration saved a moment ago is the one used. Still behind after that: ``service_unavailable``
(503, retry); still unknown: ``not_found``, unless the caller has just read it from the realizer
(it sent :class:`RealizerFacts`): then the copies are behind, 503 too.

What is an agent's own (ARCHITECTURE §5.1) is read from the same copies: an issue's assignee, an
issue's workspace, a run's agent and workspace. An agent may ask right after the change that made
a thing its own (an issue assigned to it a moment ago; its run, started a moment ago, whose event
the controller's outbox has not published yet while the adapter already has its token). So a
refusal of an agent for a thing not (yet) its own is asked again each time the copies move, for at
most :data:`OWN_WAIT` seconds within the request's deadline (:func:`owned`), before it is answered.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, TypeVar, cast

import msgspec

from contracts.workspace_config import ExecutionWorkspaceConfig, RuntimeConfig
from runtime_supervisor.domain import CopiesBehindError, NotFoundError
from runtime_supervisor.domain.configs_seen import config_fingerprint
from servicekit.access import AccessDeniedError

if TYPE_CHECKING:
    from collections.abc import Callable

    from contracts.runtime_commands import RealizerFacts
    from natsbus import RequestContext
    from runtime_supervisor.application import RuntimeSupervisorApplication
    from runtime_supervisor.domain import CopyKind, RuntimeTarget
    from runtime_supervisor.orchestration.context import Supervisor

    Seen = Callable[[CopyKind, str], set[bytes]]

__all__ = ["COPY_WAIT", "OWN_WAIT", "behind", "fresh_target", "owned", "wait_for"]

T = TypeVar("T")

COPY_WAIT = 10.0
"""Seconds a request waits at most for the copies to catch up with the realizer."""
OWN_WAIT = 2.0
"""Seconds an agent's request refused as not its own waits at most for the copies to move."""
_POLL = 0.1
_ANSWER_MARGIN = 1.0
"""Seconds kept before the request's deadline, so that the refusal still reaches the caller."""


def wait_for(ctx: RequestContext, most: float = COPY_WAIT) -> float:
    """How long a request may wait for the copies: ``most`` seconds (:data:`COPY_WAIT`), less
    near its deadline."""
    return max(0.0, min(most, ctx.remaining() - _ANSWER_MARGIN))


async def owned(sup: Supervisor, check: Callable[[], T], *, wait: float = OWN_WAIT) -> T:
    """``check()`` on the store's thread; while it refuses (``AccessDeniedError``), asked again
    each time the copies move, until ``wait`` seconds have passed (see the module's docstring).

    Only for the *own* rules of agents, whose facts lag: the kind-level rule (``Access.reach``)
    and the company are checked before, once, and never waited for.

    Args:
        sup: The supervisor.
        check: Raises ``AccessDeniedError`` while the thing is not the agent's (as the copies
            say); what it returns is answered.
        wait: Seconds to wait at most (``wait_for(ctx, OWN_WAIT)``).

    Raises:
        AccessDeniedError: Still refused after ``wait`` (and no copy moved since the last look).
    """
    app = sup.app

    def attempt() -> tuple[int, T | None, AccessDeniedError | None]:
        moved = app.copies_seen
        try:
            return moved, check(), None
        except AccessDeniedError as refused:
            return moved, None, refused

    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(wait, 0.0)
    while True:
        looked: tuple[int, T | None, AccessDeniedError | None] = await sup.store(attempt)
        moved, found, refused = looked
        if refused is None:
            return cast("T", found)
        while True:  # look again only once the copies have moved
            if loop.time() >= deadline:
                raise refused
            await asyncio.sleep(_POLL)
            if app.copies_seen != moved:
                break


def _never_heard_of(workspace_id: str | None, project_workspace_id: str | None) -> Exception:
    if workspace_id is not None:
        what, details = f"execution workspace {workspace_id}", {"workspaceId": workspace_id}
    else:
        what = f"project workspace {project_workspace_id}"
        details = {"projectWorkspaceId": str(project_workspace_id)}
    return CopiesBehindError(
        f"The runtime-supervisor has not yet heard of {what} from the workspace-realizer; "
        "retry in a moment.",
        behind=["workspace"],
        **details,
    )


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
        ``lifecycleGeneration``, ``nodeId``).
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
    node = facts.node_id
    if execution and not isinstance(node, msgspec.UnsetType) and target.node_id != node:
        differ.append("nodeId")
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
        scope: The principal's company (None: Clipyard itself's, every company).
        workspace_id: An execution workspace, or
        project_workspace_id: a project workspace.
        facts: What the caller read from the realizer.
        wait: Seconds to wait at most (see :func:`wait_for`).

    Raises:
        NotFoundError: Still unknown (or another company's) after ``wait``, and no ``facts``.
        CopiesBehindError: Known, but still behind ``facts`` after ``wait``; or still unknown
            although ``facts`` (the realizer's word) say it exists.
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
                if facts is None:
                    raise
                # The caller has just read it from the realizer: the copies are behind.
                raise _never_heard_of(workspace_id, project_workspace_id) from None
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
