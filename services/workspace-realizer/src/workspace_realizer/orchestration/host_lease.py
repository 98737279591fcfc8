"""The lease of a node's host part, ``host:<node>`` in the realizer's store: one host part per
node (docs/scale-out.md, "The workspace-realizer's two parts"). A host part beside company-wide
replicas takes it before it serves anything, fails the archives its predecessor left half done
under the lease's fence, and runs its reaper while it holds it; a second host part of the same
node finds it held by a live instance and refuses to start."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventstore.fence import fenced
from servicekit.node_lease import hold_node_lease, node_lease
from workspace_realizer.orchestration.recovery import (
    fail_interrupted_archives,
    fail_interrupted_steps,
)
from workspace_realizer.settings import SERVICE_NAME

if TYPE_CHECKING:
    from servicekit import ServiceRuntime
    from servicekit.leadership import Leadership
    from workspace_realizer.application import WorkspaceRealizerApplication

__all__ = ["HostLeaseRefusedError", "host_lease", "take_host_lease"]


class HostLeaseRefusedError(RuntimeError):
    """Another live host part holds this node's lease."""


def host_lease(runtime: ServiceRuntime) -> Leadership:
    """This instance's side of ``host:<node>`` (not started)."""
    return node_lease(runtime, f"host:{runtime.settings.node_id}")


async def take_host_lease(runtime: ServiceRuntime, leadership: Leadership) -> None:
    """Hold ``host:<node>`` (:func:`servicekit.node_lease.hold_node_lease`), then fail the
    archives the predecessor left ``closing``, fenced by the grant.

    Raises:
        HostLeaseRefusedError: Still held by another instance (a live host part of this node),
            naming it and the fix.
    """
    node = runtime.settings.node_id

    def refused(holder: str) -> Exception:
        return HostLeaseRefusedError(
            f"the lease {leadership.lease} is held by {holder}, a live host part of node {node}: "
            "run one host part per node (CLIPYARD_REALIZER_PART=host), stop the other first, or "
            "give this one the CLIPYARD_NODE_ID of its own host"
        )

    await hold_node_lease(leadership, refused)
    app: WorkspaceRealizerApplication = runtime.app  # type: ignore[assignment]
    assert leadership.fence is not None
    with fenced(leadership.fence):
        await runtime.store(fail_interrupted_archives, app, SERVICE_NAME, node)
        await runtime.store(fail_interrupted_steps, app, SERVICE_NAME, node)
