"""The replicas of a service on the bus: one identity each, and who is still alive.

Each instance names itself in its micro metadata (``instance``: ``CLIPYARD_INSTANCE_ID`` or
``<hostname>-<pid>-<4 hex>``, ``node``: ``CLIPYARD_NODE_ID``). At start, before it answers anything, an
instance asks every live instance of its service for theirs (:func:`natsbus.instances.ping_instances`)
and refuses to start when one already uses its id: two processes with one identity would hold one
lease between them. The same question tells the lease's side (:mod:`servicekit.leadership`)
whether the lease's holder is still on the bus.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from natsbus.instances import ping_instances

if TYPE_CHECKING:
    from nats.aio.client import Client

__all__ = ["DuplicateInstanceError", "InstanceDirectory"]

DEFAULT_WAIT = 0.5
"""Seconds to gather the answers of a ping."""


class DuplicateInstanceError(RuntimeError):
    """Another live instance of the service already uses this instance's id."""


class InstanceDirectory:
    """The live instances of one service, asked over the bus."""

    def __init__(
        self, nc: Client, service: str, *, own: str = "", wait: float = DEFAULT_WAIT
    ) -> None:
        """
        Args:
            nc: The bus connection.
            service: The service's name.
            own: This instance's id: a ping it does not hear itself answer tells nothing.
            wait: Seconds to gather the answers of a ping.
        """
        self._nc = nc
        self._service = service
        self._own = own
        self._wait = wait

    async def live(self) -> set[str]:
        """The instance ids of the instances that answer a ping now."""
        return {
            ping.instance for ping in await ping_instances(self._nc, self._service, wait=self._wait)
        }

    async def live_micro_ids(self) -> set[str]:
        """The micro ids (one per process start) of the instances that answer a ping now."""
        return {ping.id for ping in await ping_instances(self._nc, self._service, wait=self._wait)}

    async def alive(self, instance: str) -> bool:
        """Whether ``instance`` answers; True when this instance does not hear itself either
        (the bus is down or slow: it cannot tell)."""
        live = await self.live()
        return instance in live or bool(self._own and self._own not in live)

    async def refuse_duplicate(self, instance: str) -> None:
        """Raise when a live instance of the service already uses ``instance``.

        Raises:
            DuplicateInstanceError: With the fix.
        """
        for ping in await ping_instances(self._nc, self._service, wait=self._wait):
            if ping.instance == instance:
                node = ping.metadata.get("node", "?")
                raise DuplicateInstanceError(
                    f"{self._service}: CLIPYARD_INSTANCE_ID={instance!r} is already used by a "
                    f"running instance (micro id {ping.id}, node {node}); give each replica its "
                    "own CLIPYARD_INSTANCE_ID, or unset it for a generated one"
                )
