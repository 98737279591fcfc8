"""The lease of a node's host part, ``host:<node>`` in the realizer's store: one host part per
node (docs/scale-out.md, "The workspace-realizer's two parts"). A host part beside company-wide
replicas takes it before it serves anything, fails the archives its predecessor left half done
under the lease's fence, and runs its reaper while it holds it; a second host part of the same
node finds it held by a live instance and refuses to start."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from eventstore.fence import fenced
from servicekit.leadership import Leadership
from workspace_realizer.orchestration.recovery import fail_interrupted_archives
from workspace_realizer.settings import SERVICE_NAME

if TYPE_CHECKING:
    from servicekit import ServiceRuntime
    from workspace_realizer.application import WorkspaceRealizerApplication

__all__ = ["HostLeaseRefusedError", "host_lease", "take_host_lease"]


class HostLeaseRefusedError(RuntimeError):
    """Another live host part holds this node's lease."""


def host_lease(runtime: ServiceRuntime) -> Leadership:
    """This instance's side of ``host:<node>`` (not started)."""
    settings = runtime.settings
    return Leadership(
        runtime.app.lease_table,
        service=SERVICE_NAME,
        holder=settings.instance_id,
        ttl=settings.lease_ttl,
        lease=f"host:{settings.node_id}",
        alive=runtime.instances.alive,
    )


async def take_host_lease(runtime: ServiceRuntime, leadership: Leadership) -> None:
    """Start ``leadership`` and wait until it holds the lease (a dead predecessor's is taken over
    at once, an expired one at the next beat; two TTLs and a second at most), then fail the
    archives the predecessor left ``closing``, fenced by the grant.

    Raises:
        HostLeaseRefusedError: Still held by another instance (a live host part of this node),
            naming it and the fix.
    """
    await leadership.start()
    deadline = time.monotonic() + 2 * leadership.ttl + 1.0
    while leadership.fence is None:
        if time.monotonic() > deadline:
            node = runtime.settings.node_id
            raise HostLeaseRefusedError(
                f"the lease {leadership.lease} is held by {leadership.leader or 'another instance'}"
                f", a live host part of node {node}: run one host part per node "
                "(CLIPYARD_REALIZER_PART=host), stop the other first, or give this one the "
                "CLIPYARD_NODE_ID of its own host"
            )
        await asyncio.sleep(0.05)
    app: WorkspaceRealizerApplication = runtime.app  # type: ignore[assignment]
    with fenced(leadership.fence):
        await runtime.store(fail_interrupted_archives, app, SERVICE_NAME, runtime.settings.node_id)
