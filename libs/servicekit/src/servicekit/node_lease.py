"""A lease one process of a node must hold before it serves anything (docs/scale-out.md, "Worker
nodes"): the runtime-supervisor's ``node:<node>`` and the workspace-realizer host part's
``host:<node>``, in the service's own store. Two processes claiming one node id would act on one
host's files and processes as if each were alone; the lease makes the second wait for the first
to go (a crashed one's lease is taken over at once once it neither answers nor renews; a live
one's never), then refuse to start, naming the holder.

Unlike a ping at start, the lease also holds while the first process is still starting (it takes
the lease before it adopts or serves anything), and whatever the bus answers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from servicekit.leadership import Leadership

if TYPE_CHECKING:
    from servicekit.spec import ServiceRuntime

__all__ = ["hold_node_lease", "node_lease"]


def node_lease(runtime: ServiceRuntime, name: str) -> Leadership:
    """This instance's side of the lease ``name`` (not started); ``clipyard status`` shows its
    holder (it joins ``runtime.other_leases``), and it is released when the service stops."""
    settings = runtime.settings

    async def answers(instance: str) -> bool:
        # Not ``instances.alive``: this instance is not on the bus yet (it takes the lease
        # before it serves), so that one could never tell. A holder found silent here is
        # still watched for renewals before the lease is taken over (Leadership.take_over_from).
        return instance in await runtime.instances.live()

    leadership = Leadership(
        runtime.app.lease_table,
        service=runtime.spec.name,
        holder=settings.instance_id,
        ttl=settings.lease_ttl,
        lease=name,
        alive=answers,
    )
    runtime.other_leases.append(leadership)
    stop_within = max(1.0, settings.shutdown_timeout / 4)
    runtime.exit_stack.push_async_callback(leadership.stop, stop_within)
    return leadership


async def hold_node_lease(leadership: Leadership, refused: Callable[[str], Exception]) -> None:
    """Start ``leadership`` and wait until it holds its lease: at once when free, a crashed
    holder's within a third of a TTL, an expired one's at the next beat; two TTLs and a second
    at most.

    Raises:
        Exception: ``refused(holder)`` when another instance still holds it then.
    """
    await leadership.start()
    deadline = time.monotonic() + 2 * leadership.ttl + 1.0
    while leadership.fence is None:
        if time.monotonic() > deadline:
            raise refused(leadership.leader or "another instance")
        await asyncio.sleep(0.05)
